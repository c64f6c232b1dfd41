package main

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTracker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	timeout := errors.New("i/o timeout")
	// A result is an answer via an address, or a failure when via is "",
	// of a connection begun at begun ms and completed at ms.
	type result struct {
		begun, ms int
		via       string
	}
	cases := map[string]struct {
		reason  string
		results []result
		want    []Event
	}{
		"Steady": {
			reason:  "Answers by one carrier make one event, the first.",
			results: []result{{0, 0, "10.20.0.5"}, {50, 50, "10.20.0.5"}, {100, 100, "10.20.0.5"}},
			want:    []Event{{Time: at(0), Via: "10.20.0.5"}},
		},
		"Cutover": {
			reason: "Answers stopping, then coming via another carrier, make a no-answer event and an answer event with the outage from the last answer to the first new one.",
			results: []result{
				{0, 0, "10.20.0.5"}, {50, 50, "10.20.0.5"}, {100, 400, ""}, {150, 450, ""}, {3050, 3050, "10.20.0.10"}, {3100, 3100, "10.20.0.10"},
			},
			want: []Event{
				{Time: at(0), Via: "10.20.0.5"},
				{Time: at(400), Previous: "10.20.0.5", Error: "i/o timeout"},
				{Time: at(3050), Via: "10.20.0.10", Previous: "10.20.0.5", OutageMS: 3000},
			},
		},
		"DirectSwitch": {
			reason:  "A new carrier without a failure between is a change too.",
			results: []result{{0, 0, "10.20.0.5"}, {50, 50, "10.20.0.10"}},
			want: []Event{
				{Time: at(0), Via: "10.20.0.5"},
				{Time: at(50), Via: "10.20.0.10", Previous: "10.20.0.5", OutageMS: 50},
			},
		},
		"LateTimeouts": {
			reason: "Timeouts of connections begun before the newest answered one are stale: the path is back.",
			results: []result{
				{0, 0, "10.20.0.5"}, {100, 600, ""}, {5000, 5010, "10.20.0.10"}, {4600, 5100, ""}, {4650, 5150, ""}, {5100, 5110, "10.20.0.10"},
			},
			want: []Event{
				{Time: at(0), Via: "10.20.0.5"},
				{Time: at(600), Previous: "10.20.0.5", Error: "i/o timeout"},
				{Time: at(5010), Via: "10.20.0.10", Previous: "10.20.0.5", OutageMS: 5010},
			},
		},
		"NoAnswerFirst": {
			reason:  "A probe that starts without answers says so once.",
			results: []result{{0, 300, ""}, {50, 350, ""}, {900, 900, "10.20.0.5"}},
			want: []Event{
				{Time: at(300), Error: "i/o timeout"},
				{Time: at(900), Via: "10.20.0.5"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var tr tracker
			var got []Event
			for _, r := range tc.results {
				var e *Event
				if r.via == "" {
					e = tr.fail(at(r.begun), at(r.ms), timeout)
				} else {
					e = tr.answer(at(r.begun), at(r.ms), r.via)
				}
				if e != nil {
					got = append(got, *e)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nevents: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
