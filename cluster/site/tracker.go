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

// A result is what one connection got.
type result struct {
	begun, at time.Time
	via       string // the address the service saw, "" on error
	err       error
}

// A tracker follows the results of the probe's connections and reports
// each change of carrier. Connections overlap (each may take up to the
// probe's timeout) and complete out of order: an attempt that timed out
// during a short outage completes after a later attempt was answered. The
// tracker therefore takes the results in the order the attempts began
// (holding those that complete early), so every failed attempt counts: an
// outage is a run of failed attempts between two answered ones, measured
// from the last answer before it to the first answer after it. Its
// resolution is the probe's interval: an outage that no attempt began in
// reads as none, and a measured one is within an interval of the truth at
// each end.
type tracker struct {
	next       int            // the attempt whose result is taken next
	pending    map[int]result // results of attempts after next
	known      bool           // a result was taken
	via        string         // carrier now, "" while unanswered
	lastVia    string         // carrier of the last answer
	lastAnswer time.Time      // when the last answer came
}

// add records the result r of attempt n (0, 1, ... in the order the
// attempts began, each exactly once) and returns the events of the
// results it could take in order, none while an earlier attempt is open.
func (t *tracker) add(n int, r result) []Event {
	if t.pending == nil {
		t.pending = map[int]result{}
	}
	t.pending[n] = r
	var events []Event
	for {
		r, ok := t.pending[t.next]
		if !ok {
			return events
		}
		delete(t.pending, t.next)
		t.next++
		if e := t.take(r); e != nil {
			events = append(events, *e)
		}
	}
}

// take records the next result in order and returns the event it makes,
// nil when the carrier did not change.
func (t *tracker) take(r result) *Event {
	if r.err != nil {
		if t.known && t.via == "" {
			return nil
		}
		t.known, t.via = true, ""
		return &Event{Time: r.at, Previous: t.lastVia, Error: r.err.Error()}
	}
	var e *Event
	if !t.known || r.via != t.via {
		e = &Event{Time: r.at, Via: r.via, Previous: t.lastVia}
		if t.lastVia != "" {
			// Never negative: the last answer before may have come
			// after this one did, when it was slow.
			e.OutageMS = max(0, r.at.Sub(t.lastAnswer).Milliseconds())
		}
	}
	t.known, t.via, t.lastVia, t.lastAnswer = true, r.via, r.via, r.at
	return e
}
