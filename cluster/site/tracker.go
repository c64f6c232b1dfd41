package main

import (
	"cmp"
	"fmt"
	"time"
)

// An Event is a change of what carries the probe's connections, one JSON
// line with -json.
type Event struct {
	// Time is when the answer (or the failure) that changed it came.
	Time time.Time `json:"time"`
	// Via is the address the service saw the answered connection come
	// from (the gateway that carried it); empty when answers stopped.
	Via string `json:"via"`
	// Previous is the carrier of the last answer before, empty before the
	// first answer.
	Previous string `json:"previous,omitempty"`
	// OutageMS is, for an answer after an earlier one, the milliseconds
	// from the last answer (via Previous) to this one (via Via): the
	// outage a client host saw.
	OutageMS int64 `json:"outage_ms,omitempty"`
	// Error is the failure that stopped the answers.
	Error string `json:"error,omitempty"`
}

// String is the event as a line of text.
func (e Event) String() string {
	at := e.Time.Format("15:04:05.000")
	switch {
	case e.Via == "":
		return fmt.Sprintf("%s no answer (last via %s): %s", at, cmp.Or(e.Previous, "none"), e.Error)
	case e.Previous == "":
		return fmt.Sprintf("%s carried by %s", at, e.Via)
	default:
		return fmt.Sprintf("%s carried by %s (before: %s), outage %d ms", at, e.Via, e.Previous, e.OutageMS)
	}
}

// A tracker follows the results of the probe's connections, in the order
// they complete, and reports each change of carrier. Connections overlap:
// a result of a connection begun before the newest answered one is stale
// (a timeout completing after the path came back) and ignored.
type tracker struct {
	known      bool      // a result came
	via        string    // carrier now, "" while unanswered
	lastVia    string    // carrier of the last answer
	lastAnswer time.Time // when the last answer came
	lastBegun  time.Time // when the connection of the last answer began
}

// answer records an answer at time at, carried by via, of a connection
// begun at begun, and returns the event it makes, nil when the carrier did
// not change.
func (t *tracker) answer(begun, at time.Time, via string) *Event {
	if begun.Before(t.lastBegun) {
		return nil
	}
	var e *Event
	if !t.known || via != t.via {
		e = &Event{Time: at, Via: via, Previous: t.lastVia}
		if t.lastVia != "" {
			e.OutageMS = at.Sub(t.lastAnswer).Milliseconds()
		}
	}
	t.known, t.via, t.lastVia, t.lastAnswer, t.lastBegun = true, via, via, at, begun
	return e
}

// fail records a connection begun at begun that got no answer at time at,
// and returns the event it makes, nil when answers had already stopped.
func (t *tracker) fail(begun, at time.Time, err error) *Event {
	if begun.Before(t.lastBegun) || t.known && t.via == "" {
		return nil
	}
	t.known, t.via = true, ""
	return &Event{Time: at, Previous: t.lastVia, Error: err.Error()}
}
