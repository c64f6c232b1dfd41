// Package neutrontest serves canned Neutron answers to the unit tests of
// the OpenStack kinds' external clients and records what they send.
package neutrontest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	th "github.com/gophercloud/gophercloud/v2/testhelper"
	fakeclient "github.com/gophercloud/gophercloud/v2/testhelper/client"
)

// A Reply is a canned Neutron answer: HTTP status code and JSON body.
type Reply struct {
	Code int
	Body string
	// Header holds extra answer headers, such as Retry-After.
	Header map[string]string
	// Cut closes the connection instead of answering: a Neutron that
	// completed the request but whose answer was lost (the client reads
	// EOF).
	Cut bool
}

// Serve starts a Neutron that answers each request with the reply keyed
// "METHOD /path[?query]" (paths without the /v2.0 prefix, as gophercloud's
// test client sends them) and fails t on any other request. It records
// every request as "METHOD /path[?query] [If-Match=...] [body]", the JSON
// body re-encoded with sorted keys, and returns a Neutron client of it and
// the record. The replies are read at request time, so a test may change
// them between steps (what Neutron holds after a create). The server stops
// when the test ends.
func Serve(t *testing.T, replies map[string]Reply) (*gophercloud.ServiceClient, *[]string) {
	t.Helper()
	fs := th.SetupHTTP()
	t.Cleanup(fs.Teardown)
	var seen []string
	fs.Mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		if r.URL.RawQuery != "" {
			key += "?" + r.URL.RawQuery
		}
		rec := key
		if m := r.Header.Get("If-Match"); m != "" {
			rec += " If-Match=" + m
		}
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Errorf("%s: body is no JSON: %s", key, b)
			}
			canon, _ := json.Marshal(v)
			rec += " " + string(canon)
		}
		seen = append(seen, rec)
		rp, ok := replies[key]
		if !ok {
			t.Errorf("unexpected request %s", rec)
			rp = Reply{Code: http.StatusNotImplemented, Body: `{}`}
		}
		if rp.Cut {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("%s: cannot cut the connection: %v", key, err)
				return
			}
			_ = conn.Close()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		for k, v := range rp.Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(rp.Code)
		_, _ = w.Write([]byte(rp.Body))
	})
	return fakeclient.ServiceClient(fs), &seen
}

// Error is Neutron's error body
// (https://docs.openstack.org/api-ref/network/v2/#faults) with type typ
// and message msg.
func Error(typ, msg string) string {
	b, _ := json.Marshal(map[string]map[string]string{"NeutronError": {"type": typ, "message": msg, "detail": ""}})
	return string(b)
}

// Message is err's text, "" for nil, for tests that compare what a user
// reads.
func Message(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
