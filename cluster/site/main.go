// Command site builds and works the local stack's site, the world the
// migration runbook happens in (test/topology, as the integration tests
// build it; docs/site.md): `site up` is its one long-running process, which
// owns the namespaces (PREFIX + role), the charons, the VMs' and nodes'
// Neutron ports (Neutron's real agents do their port security and the
// floating IPs) and the tenant service, serves the verbs
// that change them on a unix socket in STATE/site and removes everything
// when it ends (SIGTERM, or a failed bring-up). Every other verb talks to
// it or reads the site directly. cluster/site/site.sh runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// usage is what site.sh prints for a verb it does not know.
const usage = `usage: site -state STATE -prefix PREFIX VERB
  up -clouds F -psk F   bring the site up with Neutron's real agents and run it until SIGTERM
  status                namespaces, charons, the qrouter's floating IPs, the node ports' rules, the client's SAs
  vm-stop, vm-start     stop the VM gateway's charon (SIGTERM: its IKE DELETEs go out), start it again
  client-sas, sas ROLE  swanctl --list-sas of the client site's charon, or of ROLE's (client, vm, gw)
  probe [FLAGS]         the client host's connections to the tenant service: who carries them (probe -h)
  exec ROLE CMD...      run CMD in the namespace of ROLE (router, client, host, vm, svc, gw)
  standin-up            a stand-in gateway at 10.20.0.10 (namespace gw, a charon like the VM's)
  standin-down          remove it
  attach NETNS LINK INSTANCE  make NETNS's LINK (a node's macvlan parent's peer) the tap of a tenant-net port of INSTANCE
  remove                remove what a killed site left (namespaces)
  echo [-listen :443]   answer each TCP connection with its source address, here (the tenant app's image)
`

func main() {
	state := flag.String("state", "", "the local stack's state directory")
	prefix := flag.String("prefix", "", "the site's namespaces' prefix")
	flag.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 || (*state == "" || *prefix == "") && args[0] != "echo" {
		flag.Usage()
		os.Exit(2)
	}
	s := paths{state: *state, dir: filepath.Join(*state, "site")}
	tp := topology.Open(*prefix, s.dir)
	if err := run(s, tp, args[0], args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "site:", err)
		os.Exit(1)
	}
}

// paths are the site's places: its state directory (the supervisor's log
// site.log is there) and its own directory (a directory per charon, the
// socket).
type paths struct{ state, dir string }

func (p paths) socket() string { return filepath.Join(p.dir, "site.sock") }

func run(p paths, tp *topology.Topology, verb string, args []string) error {
	switch verb {
	case "up":
		return upVerb(p, tp, args)
	case "status", "vm-stop", "vm-start", "standin-up", "standin-down":
		return call(p, verb, nil)
	case "attach":
		return attach(p, args)
	case "client-sas":
		return sas(p, "client")
	case "sas":
		if len(args) != 1 {
			return fmt.Errorf("usage: sas ROLE")
		}
		return sas(p, args[0])
	case "probe":
		return probe(tp, args)
	case "exec":
		return execVerb(tp, args)
	case "remove":
		return topology.Remove(tp.Prefix)
	case "echo":
		fs := flag.NewFlagSet("echo", flag.ExitOnError)
		listen := fs.String("listen", ":443", "TCP address to listen on")
		_ = fs.Parse(args)
		ln, err := net.Listen("tcp4", *listen)
		if err != nil {
			return err
		}
		topology.AnswerWhoAmI(ln)
		return nil
	}
	fmt.Fprint(os.Stderr, usage)
	os.Exit(2)
	return nil
}

// upVerb runs `site up` with its flags args until SIGINT or SIGTERM.
func upVerb(p paths, tp *topology.Topology, args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	clouds := fs.String("clouds", "", "the clouds.yaml of the local Neutron")
	psk := fs.String("psk", "", "the YAML holding the PSK both ends share (psk: VALUE)")
	_ = fs.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return up(ctx, p, tp.Prefix, *clouds, *psk)
}

// attach asks the running site to attach NETNS's LINK for the instance
// INSTANCE (args: NETNS LINK INSTANCE).
func attach(p paths, args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: attach NETNS LINK INSTANCE")
	}
	return call(p, "attach", url.Values{"netns": {args[0]}, "link": {args[1]}, "instance": {args[2]}})
}

// execVerb replaces this process with args[1:] run in the namespace of
// the role args[0]; it returns only on error.
func execVerb(tp *topology.Topology, args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: exec ROLE CMD...") //nolint:staticcheck // ST1005: the verb's line of the usage text, ellipsis and all
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return err
	}
	return syscall.Exec(nsenter, append([]string{"nsenter", "--net=/run/netns/" + tp.NS(args[0]), "--"}, args[1:]...), os.Environ())
}

// call asks the running site (up) to do verb and prints its answer.
func call(p paths, verb string, q url.Values) error {
	c := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", p.socket())
	}}}
	resp, err := c.Post("http://site/"+verb+"?"+q.Encode(), "", nil)
	if err != nil {
		return fmt.Errorf("cannot reach the site on %s (is it up? cluster/site/site.sh up): %w", p.socket(), err)
	}
	defer resp.Body.Close() //nolint:errcheck // only read: closing loses nothing
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", verb, strings.TrimSpace(string(body)))
	}
	fmt.Print(string(body))
	return nil
}

// sas prints swanctl --list-sas of the charon of role.
func sas(p paths, role string) error {
	out, err := (&topology.Charon{Dir: filepath.Join(p.dir, role)}).Swanctl(context.Background(), "--list-sas")
	fmt.Print(out)
	return err
}
