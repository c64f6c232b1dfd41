package openstack

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
)

// An APIError is an error response of an OpenStack API, with the error
// type and message of Neutron's body {"NeutronError": {"type", "message",
// "detail"}} (https://docs.openstack.org/api-ref/network/v2/#faults) or
// Keystone's {"error": {"code", "title", "message"}}.
type APIError struct {
	// Code is the HTTP status code.
	Code int
	// Type is Neutron's error type, such as FloatingIPNotFound or
	// IpAddressAlreadyAllocated, or Keystone's title, such as Unauthorized;
	// empty when the body is neither's.
	Type string
	// Message is Neutron's or Keystone's message, or the HTTP status text.
	Message string

	keystone bool
}

func (e *APIError) Error() string {
	switch {
	case e.Type == "":
		return fmt.Sprintf("OpenStack API returned %d: %s", e.Code, e.Message)
	case e.keystone:
		return fmt.Sprintf("Keystone %d %s: %s", e.Code, e.Type, e.Message)
	}
	return fmt.Sprintf("Neutron %d %s: %s", e.Code, e.Type, e.Message)
}

// Retryable says whether the request may succeed when repeated later:
// conflicts (409), failed preconditions such as a stale revision_number
// (412), rate limits (429) and server errors (5xx).
func (e *APIError) Retryable() bool {
	return e.Code == http.StatusConflict || e.Code == http.StatusPreconditionFailed ||
		e.Code == http.StatusTooManyRequests || e.Code >= 500
}

// AsAPIError returns the APIError in err, parsing gophercloud's
// ErrUnexpectedResponseCode, and whether there is one.
func AsAPIError(err error) (*APIError, bool) {
	var a *APIError
	if errors.As(err, &a) {
		return a, true
	}
	var u gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &u) {
		return nil, false
	}
	return parseAnswer(u.Actual, u.Body), true
}

// parseAnswer is the APIError of an answer with status code and body.
func parseAnswer(code int, b []byte) *APIError {
	a := &APIError{Code: code, Message: http.StatusText(code)}
	var body struct {
		NeutronError *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"NeutronError"`
		Error *struct {
			Title   string `json:"title"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil {
		switch {
		case body.NeutronError != nil:
			a.Type, a.Message = body.NeutronError.Type, body.NeutronError.Message
		case body.Error != nil:
			a.Type, a.Message, a.keystone = body.Error.Title, body.Error.Message, true
		}
	}
	return a
}

// Wrap returns err with Neutron's own type and message in place of
// gophercloud's generic text, prefixed by what failed, such as
// "cannot create port". A request held or throttled by the
// ProviderConfig's Gate is wrapped as its HeldError or ThrottledError,
// without the URL. Errors that are no API response are wrapped as they
// are.
func Wrap(err error, what string) error {
	if err == nil {
		return nil
	}
	var h *HeldError
	if errors.As(err, &h) {
		return fmt.Errorf("%s: %w", what, h)
	}
	var th *ThrottledError
	if errors.As(err, &th) {
		return fmt.Errorf("%s: %w", what, th)
	}
	if a, ok := AsAPIError(err); ok {
		return fmt.Errorf("%s: %w", what, a)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// IsNotFound says whether err is an API answer of 404.
func IsNotFound(err error) bool {
	a, ok := AsAPIError(err)
	return ok && a.Code == http.StatusNotFound
}
