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
	// of the attempt n begun at begun ms and completed at ms, given to
	// the tracker in the order of the list (the order they complete).
	type attempt struct {
		n, begun, ms int
		via          string
	}
	cases := map[string]struct {
		reason  string
		results []attempt
		want    []Event
	}{
		"Steady": {
			reason:  "Answers by one carrier make one event, the first.",
			results: []attempt{{0, 0, 0, "10.20.0.5"}, {1, 50, 50, "10.20.0.5"}, {2, 100, 100, "10.20.0.5"}},
			want:    []Event{{Time: at(0), Via: "10.20.0.5"}},
		},
		"Cutover": {
			reason: "Answers stopping, then coming via another carrier, make a no-answer event and an answer event with the outage from the last answer to the first new one.",
			results: []attempt{
				{0, 0, 0, "10.20.0.5"}, {1, 50, 50, "10.20.0.5"}, {2, 100, 400, ""}, {3, 150, 450, ""}, {4, 3050, 3050, "10.20.0.10"}, {5, 3100, 3100, "10.20.0.10"},
			},
			want: []Event{
				{Time: at(0), Via: "10.20.0.5"},
				{Time: at(400), Previous: "10.20.0.5", Error: "i/o timeout"},
				{Time: at(3050), Via: "10.20.0.10", Previous: "10.20.0.5", OutageMS: 3000},
			},
		},
		"DirectSwitch": {
			reason:  "A new carrier without a failure between is a change too.",
			results: []attempt{{0, 0, 0, "10.20.0.5"}, {1, 50, 50, "10.20.0.10"}},
			want: []Event{
				{Time: at(0), Via: "10.20.0.5"},
				{Time: at(50), Via: "10.20.0.10", Previous: "10.20.0.5", OutageMS: 50},
			},
		},
		"ShortOutage": {
			reason: "An outage shorter than the timeout is one: the attempts begun in it time out after later attempts were answered, and still count, in the order the attempts began.",
			results: []attempt{
				{0, 0, 1, "10.20.0.10"}, {1, 50, 51, "10.20.0.10"},
				// 100 and 150 begin in a 150 ms outage; 200 and 250 are answered before they time out.
				{4, 200, 201, "10.20.0.10"}, {5, 250, 251, "10.20.0.10"}, {2, 100, 600, ""}, {3, 150, 650, ""}, {6, 300, 301, "10.20.0.10"},
			},
			want: []Event{
				{Time: at(1), Via: "10.20.0.10"},
				{Time: at(600), Previous: "10.20.0.10", Error: "i/o timeout"},
				{Time: at(201), Via: "10.20.0.10", Previous: "10.20.0.10", OutageMS: 150},
			},
		},
		"LateTimeouts": {
			reason: "Timeouts completing after the path came back are taken in their attempts' order: one outage, from the last answer before them to the first after.",
			results: []attempt{
				{0, 0, 0, "10.20.0.5"}, {1, 100, 600, ""}, {3, 5000, 5010, "10.20.0.10"}, {2, 4650, 5150, ""}, {4, 5100, 5110, "10.20.0.10"},
			},
			want: []Event{
				{Time: at(0), Via: "10.20.0.5"},
				{Time: at(600), Previous: "10.20.0.5", Error: "i/o timeout"},
				{Time: at(5010), Via: "10.20.0.10", Previous: "10.20.0.5", OutageMS: 5010},
			},
		},
		"SlowAnswerBefore": {
			reason: "A slow answer that comes after the first answer of the next carrier makes no negative outage.",
			results: []attempt{
				{0, 0, 0, "10.20.0.5"}, {2, 100, 101, "10.20.0.10"}, {1, 50, 450, "10.20.0.5"},
			},
			want: []Event{
				{Time: at(0), Via: "10.20.0.5"},
				{Time: at(101), Via: "10.20.0.10", Previous: "10.20.0.5", OutageMS: 0},
			},
		},
		"NoAnswerFirst": {
			reason:  "A probe that starts without answers says so once.",
			results: []attempt{{0, 0, 300, ""}, {1, 50, 350, ""}, {2, 900, 900, "10.20.0.5"}},
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
				res := result{begun: at(r.begun), at: at(r.ms), via: r.via}
				if r.via == "" {
					res.err = timeout
				}
				got = append(got, tr.add(r.n, res)...)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nevents: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
