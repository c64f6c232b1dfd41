package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEcho(t *testing.T) {
	cases := map[string]struct {
		reason  string
		typ     byte
		id, seq uint16
		payload []byte
		want    []byte
	}{
		"EvenPayload": {
			reason: "An echo request carries type 8, code 0, the checksum, identifier and sequence number in network order, then the payload.",
			typ:    8, id: 0x1234, seq: 1, payload: []byte{0xab, 0xcd},
			want: []byte{8, 0, 0x39, 0xfd, 0x12, 0x34, 0, 1, 0xab, 0xcd},
		},
		"OddPayload": {
			reason: "An odd byte is checksummed as if padded with a zero byte (RFC 1071).",
			typ:    8, id: 0, seq: 0, payload: []byte{0x01},
			want: []byte{8, 0, 0xf6, 0xff, 0, 0, 0, 0, 0x01},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := echo(tc.typ, tc.id, tc.seq, tc.payload)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\necho(): -want, +got:\n%s", tc.reason, diff)
			}
			if c := checksum(got); c != 0 {
				t.Errorf("%s\nchecksum over the message with its checksum is %#04x, want 0", tc.reason, c)
			}
		})
	}
}
