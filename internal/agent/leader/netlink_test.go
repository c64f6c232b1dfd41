package leader

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// inNetns runs f on a thread of its own in a network namespace of its own,
// with an interface net1 that is up, and returns f's result. The
// thread stays locked, so that it ends with its goroutine and the
// namespace with it: nothing is left, even when f fails.
func inNetns(t *testing.T, f func(link netlink.Link) (string, error)) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a network namespace of the test's own needs root: run the tests as root")
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("unshare: %w", err)}
			return
		}
		// A veth pair: this kernel may lack the dummy driver.
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "net1"}, PeerName: "peer1"}); err != nil {
			done <- result{err: fmt.Errorf("cannot add a veth net1: %w", err)}
			return
		}
		link, err := netlink.LinkByName("net1")
		if err == nil {
			err = netlink.LinkSetUp(link)
		}
		if err != nil {
			done <- result{err: err}
			return
		}
		out, err := f(link)
		done <- result{out, err}
	}()
	r := <-done
	return r.out, r.err
}

// addAddr adds cidr to link with the valid and preferred lifetime secs
// (0: permanent).
func addAddr(link netlink.Link, cidr string, secs int) error {
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		return err
	}
	a.ValidLft, a.PreferedLft = secs, secs
	return netlink.AddrAdd(link, a)
}

// lifetimes lists link's IPv4 addresses as "10.20.0.10/24 4s" (the valid
// lifetime left, "forever" for a permanent one).
func lifetimes(link netlink.Link) (string, error) {
	all, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return "", err
	}
	var out []string
	for _, a := range all {
		left := fmt.Sprintf("%ds", a.ValidLft)
		if uint32(a.ValidLft) == ^uint32(0) { //nolint:gosec // G115: the kernel's infinity
			left = "forever"
		}
		out = append(out, a.IPNet.String()+" "+left)
	}
	return strings.Join(out, ", "), nil
}

// TestAddressRefresh proves Refresh against the kernel: it gives every IPv4
// address of the interface the renew deadline as its lifetime, a
// permanent one too, and leaves them all as they were when the gateway's
// address is gone or expiring.
func TestAddressRefresh(t *testing.T) {
	const gw, other = "10.20.0.10/24", "100.64.0.1/10"
	cases := map[string]struct {
		reason string
		// addrs are the addresses with their lifetimes in seconds.
		addrs map[string]int
		// want are addresses as lifetimes lists them after Refresh,
		// notWant addresses it must not list.
		want, notWant []string
		wantErr       error
	}{
		"Renews": {
			reason: "The gateway's address and the other one Up gave are kept for the renew deadline from now.",
			addrs:  map[string]int{gw: 30, other: 30},
			want:   []string{"10.20.0.10/24 4s", "100.64.0.1/10 4s"},
		},
		"Permanent": {
			reason: "A permanent address (an Up rendered before addresses had a lifetime) gets one.",
			addrs:  map[string]int{gw: 0},
			want:   []string{"10.20.0.10/24 4s"},
		},
		"Gone": {
			reason:  "Without the gateway's address nothing is renewed: the other address keeps its lifetime.",
			addrs:   map[string]int{other: 30},
			want:    []string{"100.64.0.1/10 30s"},
			wantErr: errors.New(errNoAddress),
		},
		"Expiring": {
			reason:  "The gateway's address with a second left is not renewed (the kernel may remove it before the renewal arrives), nor is the other one.",
			addrs:   map[string]int{gw: 1, other: 30},
			want:    []string{"100.64.0.1/10 30s"},
			notWant: []string{"10.20.0.10/24 4s"},
			wantErr: errors.New(errExpiring),
		},
	}
	// A second may pass between the addresses' addition, the refresh and
	// the list.
	tolerate := strings.NewReplacer(" 3s", " 4s", " 29s", " 30s")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var errRefresh error
			got, err := inNetns(t, func(link netlink.Link) (string, error) {
				for _, c := range []string{gw, other} {
					if secs, ok := tc.addrs[c]; ok {
						if err := addAddr(link, c, secs); err != nil {
							return "", err
						}
					}
				}
				a := &Address{Interface: "net1", IP: netip.MustParseAddr("10.20.0.10")}
				errRefresh = a.Refresh(context.Background(), DefaultRenewDeadline)
				return lifetimes(link)
			})
			if err != nil {
				t.Fatal(err)
			}
			gotErr := errRefresh
			if gotErr != nil {
				// The error's last part says why.
				gotErr = errors.New(gotErr.Error()[strings.LastIndex(gotErr.Error(), ": ")+2:])
			}
			if diff := cmp.Diff(fmt.Sprint(tc.wantErr), fmt.Sprint(gotErr)); diff != "" {
				t.Errorf("%s\nRefresh(): -want error, +got error:\n%s", tc.reason, diff)
			}
			listed := strings.Split(tolerate.Replace(got), ", ")
			for _, w := range tc.want {
				if !slices.Contains(listed, w) {
					t.Errorf("%s\nafter Refresh() the addresses are %q, want %q among them", tc.reason, got, w)
				}
			}
			for _, w := range tc.notWant {
				if slices.Contains(listed, w) {
					t.Errorf("%s\nafter Refresh() the addresses are %q, want no %q", tc.reason, got, w)
				}
			}
		})
	}
}

// TestSilenceAndRelease proves the interface changes against the kernel:
// Silence(true) sets NOARP and keeps the addresses; Silence(false) clears
// NOARP and the arp_ignore 8 the CNI brings net1 up with; Release sets the
// interface down before it runs Down.
func TestSilenceAndRelease(t *testing.T) {
	got, err := inNetns(t, func(link netlink.Link) (string, error) {
		if err := addAddr(link, "10.20.0.10/24", 0); err != nil {
			return "", err
		}
		// /proc/sys/net is the namespace's of the thread that opens it.
		const arpIgnore = "/proc/sys/net/ipv4/conf/net1/arp_ignore"
		if err := os.WriteFile(arpIgnore, []byte("8"), 0o600); err != nil {
			return "", err
		}
		var steps []string
		look := func(step string) error {
			l, err := netlink.LinkByName("net1")
			if err != nil {
				return err
			}
			ign, err := os.ReadFile(arpIgnore)
			if err != nil {
				return err
			}
			addrs, err := lifetimes(l)
			if err != nil {
				return err
			}
			steps = append(steps, fmt.Sprintf("%s: up %t, noarp %t, arp_ignore %s, %s", step,
				l.Attrs().RawFlags&unix.IFF_UP != 0, l.Attrs().RawFlags&unix.IFF_NOARP != 0, strings.TrimSpace(string(ign)), addrs))
			return nil
		}
		if err := Silence("net1", true); err != nil {
			return "", err
		}
		if err := look("silenced"); err != nil {
			return "", err
		}
		if err := Silence("net1", false); err != nil {
			return "", err
		}
		if err := look("answering"); err != nil {
			return "", err
		}
		a := &Address{Interface: "net1", Down: "ip -4 address show dev net1 up | grep -q . && exit 1 || true"}
		if err := a.Release(context.Background()); err != nil {
			return "", err
		}
		if err := look("released"); err != nil {
			return "", err
		}
		return strings.Join(steps, "\n"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"silenced: up true, noarp true, arp_ignore 8, 10.20.0.10/24 forever",
		"answering: up true, noarp false, arp_ignore 0, 10.20.0.10/24 forever",
		"released: up false, noarp false, arp_ignore 0, 10.20.0.10/24 forever",
	}, "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("net1 after each step: -want, +got:\n%s", diff)
	}
}
