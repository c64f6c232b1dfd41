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
// for anything else while a Streamer call runs.
//
// A call that ctx ends while charon still lists (SIGTERM, the watchdog's
// bound) leaves its event registered: govici's Unsubscribe holds the
// session's event lock while it waits, without a context, for charon's
// confirmation, and its reader needs that lock for each of the command's
// events still on their way, so it would never read the confirmation and
// both would wait forever (the agent that did not stop on SIGTERM). The
// next call first waits for the answer to a version command, which charon
// sends after the abandoned command's events; then no event is on its way
// and that call may register and unregister as usual.
type Streamer struct {
	Session *vici.Session

	mu sync.Mutex
	// abandoned names the event of a call that ended before charon's
	// response; empty when no command's events may still arrive.
	abandoned string
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
	if s.abandoned != "" {
		if _, err := s.Session.Call(ctx, "version", nil); err != nil {
			return nil, fmt.Errorf("cannot wait for the end of an abandoned %s stream: %w", s.abandoned, err)
		}
		// The abandoned command's events came before this answer.
		if err := s.Session.Unsubscribe(s.abandoned); err != nil {
			return nil, fmt.Errorf("cannot unregister from %s events: %w", s.abandoned, err)
		}
		s.abandoned = ""
	}
	if err := s.Session.Subscribe(event); err != nil {
		return nil, fmt.Errorf("cannot register for %s events: %w", event, err)
	}
	ch := make(chan vici.Event, StreamBuffer)
	s.Session.NotifyEvents(ch)
	defer s.Session.StopEvents(ch)
	_, err := s.Session.Call(ctx, cmd, in)
	if err != nil && ctx.Err() != nil {
		// charon may still be sending the command's events: see Streamer
		// for why they must not meet an Unsubscribe.
		s.abandoned = event
		return nil, err
	}
	_ = s.Session.Unsubscribe(event)
	if err != nil {
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
