package migrate

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// confDuration parses an ipsec.conf time: a number with s, m, h or d, or
// seconds without a unit.
func confDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	unit := time.Second
	switch {
	case strings.HasSuffix(v, "s"):
		v = strings.TrimSuffix(v, "s")
	case strings.HasSuffix(v, "m"):
		v, unit = strings.TrimSuffix(v, "m"), time.Minute
	case strings.HasSuffix(v, "h"):
		v, unit = strings.TrimSuffix(v, "h"), time.Hour
	case strings.HasSuffix(v, "d"):
		v, unit = strings.TrimSuffix(v, "d"), 24*time.Hour
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a time (a number with s, m, h or d)", v)
	}
	return time.Duration(n) * unit, nil
}

// apiDuration writes d as the API's Duration, compactly: "2h51m", "9m",
// "90s", "0".
func apiDuration(d time.Duration) *gwv1alpha1.Duration {
	s := "0"
	if d > 0 {
		s = ""
		h, m, sec := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
		if h > 0 {
			s += strconv.Itoa(h) + "h"
		}
		if m > 0 {
			s += strconv.Itoa(m) + "m"
		}
		if sec > 0 {
			s += strconv.Itoa(sec) + "s"
		}
	}
	out := gwv1alpha1.Duration(s)
	return &out
}
