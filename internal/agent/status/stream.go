package status

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/strongswan/govici/vici"
)

// StreamBuffer is how many events one streamed command may return through
// a Streamer (IKE SAs for list-sas, connections for list-conns).
const StreamBuffer = 4096

// A Streamer makes streamed VICI commands (list-sas, list-conns) reliably
// on a session of its own.
//
// govici v0.8.0's Session.CallStreaming loses events: its reader puts
// stream events and the final command response on two channels and the
// caller selects between them, so the response often wins over events
// still queued, which are then dropped (or read as the answer to the next
// request: "vici: unexpected response type: 7"). Against a real charon with
// five connections, 657 of 1000 list-conns calls on fresh sessions returned
// fewer than five, and reusing a session made it worse. A Streamer instead
// registers for the event like any other (Subscribe, NotifyEvents) and makes
// a plain Call: govici's reader delivers every event before it reads the
// response, so when Call returns all events are in the channel.
//
// The session must not be subscribed to other events, and must not be used
// for anything else while a Streamer call runs. A Streamer stays
// subscribed to the events of its commands once it made one: govici v0.8.0
// holds its event lock while it waits for charon to confirm an Unsubscribe,
// and its reader needs that lock for every event, so an event still on its
// way (the rest of a list-sas whose call ended with its context, as a
// SIGTERM or a timeout ends it) stopped the reader, the confirmation was
// never read and both waited for ever: the agent did not stop on SIGTERM
// (kernel tier, a list-sas of 100 tunnels) and its watchdog would have
// stopped for good.
type Streamer struct {
	Session *vici.Session

	mu sync.Mutex
	// interrupted is set when a call ended before charon's answer: the
	// rest of its events may still come.
	interrupted bool
}

// CallStreaming implements Caller: it runs cmd, collecting the events named
// event, and yields them in order, then charon's error if the command
// failed. More than StreamBuffer events is an error.
func (s *Streamer) CallStreaming(ctx context.Context, cmd, event string, in *vici.Message) iter.Seq2[*vici.Message, error] {
	return func(yield func(*vici.Message, error) bool) {
		msgs, err := s.call(ctx, cmd, event, in)
		for _, m := range msgs {
			if !yield(m, nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

func (s *Streamer) call(ctx context.Context, cmd, event string, in *vici.Message) ([]*vici.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.interrupted {
		// charon sends a command's events before its answer and answers a
		// session's commands in order: once version is answered, the
		// interrupted command's last events have come, and with no channel
		// notified they went nowhere.
		if _, err := s.Session.Call(ctx, "version", nil); err != nil {
			return nil, err
		}
		s.interrupted = false
	}
	// No request when the session is subscribed already (govici).
	if err := s.Session.Subscribe(event); err != nil {
		return nil, fmt.Errorf("cannot register for %s events: %w", event, err)
	}
	ch := make(chan vici.Event, StreamBuffer)
	s.Session.NotifyEvents(ch)
	defer s.Session.StopEvents(ch)
	if _, err := s.Session.Call(ctx, cmd, in); err != nil {
		s.interrupted = true
		return nil, err
	}
	if len(ch) == cap(ch) {
		return nil, fmt.Errorf("%s: more than %d %s events", cmd, StreamBuffer, event)
	}
	var out []*vici.Message
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				return out, nil
			}
			if e.Name == event {
				out = append(out, e.Message)
			}
		default:
			return out, nil
		}
	}
}
