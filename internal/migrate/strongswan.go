package migrate

import (
	"cmp"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// strongSwan 5.9's ipsec.conf defaults (ipsec.conf(5)) that change what a
// peer sees.
const (
	defIKELifetime = 3 * time.Hour
	defLifetime    = time.Hour
	defMargin      = 9 * time.Minute
	defFuzz        = 100 // percent
	defDPDDelay    = 30 * time.Second
)

// handledKeys are the conn keywords the converter reads; every other one is
// reported as refused (not understood), unless it is in noWireEffect.
var handledKeys = map[string]bool{
	"left": true, "right": true, kwLeftID: true, kwRightID: true, "leftsubnet": true, "rightsubnet": true,
	"auto": true, "keyexchange": true, "ike": true, "esp": true, "ikelifetime": true, "keylife": true,
	"lifetime": true, "rekeymargin": true, "margintime": true, "rekeyfuzz": true, "keyingtries": true,
	"dpddelay": true, "dpdtimeout": true, "dpdaction": true, "authby": true, "leftauth": true, "rightauth": true,
	"leftcert": true, "rightcert": true, "leftca": true, "rightca": true, "type": true, "aggressive": true,
	"reauth": true, "rekey": true, "mobike": true, "forceencaps": true, "fragmentation": true,
	"closeaction": true, "compress": true,
}

// noWireEffect are keywords a peer cannot notice (local plumbing of the VM).
var noWireEffect = map[string]string{
	"leftnexthop": "charon ignores it", "rightnexthop": "charon ignores it",
	"installpolicy": "the gateway installs its policies itself", "leftsendcert": "the gateway sends its certificate when asked",
	"rightsendcert": "", "leftallowany": "", "rightallowany": "",
}

// refusedKeys are keywords the gateway cannot carry, with why; drops says
// the tunnel cannot work without them.
var refusedKeys = map[string]struct {
	why   string
	drops bool
}{
	"leftupdown":     {"an updown script runs commands on the VM (routes, firewall rules) that the gateway does not run; carry its effect in the IPsecGateway (mode routed, tenantSubnets) and check it by hand", false},
	"rightupdown":    {"an updown script runs commands on the VM that the gateway does not run", false},
	"leftfirewall":   {"the VM's iptables rules for the tunnel: the gateway's security group and nftables rules replace them", false},
	"lefthostaccess": {"access to the VM itself through the tunnel: the gateway is not a host tenants use", false},
	"mark":           {"XFRM marks (a VTI's) are not in the API: a route-based tunnel is the tunnel's mode route with routes, which live in the VM's updown script", true},
	"mark_in":        {"XFRM marks are not in the API: a route-based tunnel is the tunnel's mode route with routes, which live in the VM's updown script", true},
	"mark_out":       {"XFRM marks are not in the API: a route-based tunnel is the tunnel's mode route with routes, which live in the VM's updown script", true},
	"leftsourceip":   {"virtual IPs (a road-warrior set-up) are not in the API", true},
	"rightsourceip":  {"virtual IPs for road warriors are not in the API: the gateway connects sites", true},
	"leftprotoport":  {"port and protocol selectors are not in the API: the traffic selectors are whole subnets", true},
	"rightprotoport": {"port and protocol selectors are not in the API: the traffic selectors are whole subnets", true},
	"leftauth2":      {"a second authentication round (XAUTH, EAP) is not in the API", true},
	"rightauth2":     {"a second authentication round (XAUTH, EAP) is not in the API", true},
	"xauth":          {"XAUTH is not in the API", true},
	"ikedscp":        {"the DSCP of IKE packets is not in the API", false},
	"replay_window":  {"the replay window is not in the API (the gateway uses charon's default, 32 packets)", false},
	"tfc":            {"traffic flow confidentiality padding is not in the API", false},
}

// strokeTunnel converts one conn of a strongSwan ipsec.conf, reporting every
// setting into r. It returns nil when the conn is not loaded (auto=ignore)
// or a refusal drops it.
func (im *importer) strokeTunnel(c Conn) *gwv1alpha1.Tunnel {
	t := &gwv1alpha1.Tunnel{Name: tunnelName(c.Name)}
	name := c.Name
	add := func(f Finding) { f.Tunnel = name; im.report.add(f) }
	from := func(k string) string { return c.Settings[k].From }
	dropped := false
	refuse := func(k, why string, drops bool) {
		add(Finding{Setting: k, Value: c.Get(k, ""), Outcome: Refused, Detail: why, Drops: drops, From: from(k)})
		dropped = dropped || drops
	}

	auto := c.Get("auto", "ignore")
	if t.StartAction = startAction(auto); t.StartAction == "" {
		add(Finding{Setting: "auto", Value: auto, Outcome: Converted, From: from("auto"),
			Detail: "the daemon does not load this conn (auto=ignore, the default): a template for also=; nothing to import"})
		return nil
	}
	add(Finding{Setting: "auto", Value: auto, Outcome: Converted, From: from("auto"), Detail: "startAction " + t.StartAction})
	if t.Name != c.Name {
		add(Finding{Setting: kwConn, Value: c.Name, Outcome: Converted,
			Detail: "tunnel name " + t.Name + " (the API's name pattern); names are not on the wire"})
	}

	// What the peer sees first: the IKE version.
	switch kx := c.Get("keyexchange", "ike"); kx {
	case "ikev1":
		t.IKEVersion = 1
		add(Finding{Setting: "keyexchange", Value: kx, Outcome: Converted, From: from("keyexchange"), Detail: "ikeVersion 1"})
	case "ikev2":
		t.IKEVersion = 2
		add(Finding{Setting: "keyexchange", Value: kx, Outcome: Converted, From: from("keyexchange"), Detail: "ikeVersion 2"})
	default:
		t.IKEVersion = 2
		add(Finding{Setting: "keyexchange", Value: kx, Outcome: Approximated, From: from("keyexchange"),
			Detail: "ike means IKEv2 in charon when initiating, and either version when responding: ikeVersion 2; a peer that initiates IKEv1 fails to connect"})
	}

	im.strokeKeywords(c, add, refuse)
	if typ := c.Get("type", "tunnel"); typ != "tunnel" {
		refuse("type", "only tunnel mode is in the API (transport, passthrough and drop conns are not site-to-site tunnels)", true)
	}
	if c.Get("aggressive", "no") == yes {
		refuse("aggressive", "IKEv1 aggressive mode is not in the API (main mode only): it exposes the PSK's hash to an eavesdropper", true)
	}
	if c.Get("right", anyID) == anyID {
		refuse("right", "a road-warrior conn (right=%any) answers any address: the API's tunnels have one peer address", true)
	}
	if c.Get("compress", "no") == yes {
		add(Finding{Setting: "compress", Value: yes, Outcome: Approximated, From: from("compress"),
			Detail: "IPComp is not in the API: the gateway proposes no compression; the peer sees the CHILD_SA without it"})
	}

	im.strokeProposals(c, t, add)
	im.strokeLifetimes(c, t, add)
	im.strokeDPD(c, t, add)
	im.strokeMisc(c, t, add)
	if dropped || !im.strokeSelectors(c, t, add) || !im.strokeAuth(c, t, add) {
		return nil
	}
	return t
}

// startAction is the API's startAction of an ipsec.conf auto=, or "" for
// a conn the daemon does not load.
func startAction(auto string) string {
	return map[string]string{"start": actStart, "route": actTrap, "add": "respond"}[auto]
}

// strokeKeywords reports the keywords refused, without effect on the wire,
// or unknown to the importer.
func (im *importer) strokeKeywords(c Conn, add func(Finding), refuse func(k, why string, drops bool)) {
	for _, k := range sortedKeys(c.Settings) {
		if rk, ok := refusedKeys[k]; ok {
			refuse(k, rk.why, rk.drops)
		} else if why, ok := noWireEffect[k]; ok {
			add(Finding{Setting: k, Value: c.Get(k, ""), Outcome: Converted, From: c.Settings[k].From, Detail: strings.TrimSpace("not carried: the peer sees no difference; " + why)})
		} else if !handledKeys[k] {
			refuse(k, "the importer does not know this keyword: check its effect by hand", false)
		}
	}
}

func (im *importer) strokeProposals(c Conn, t *gwv1alpha1.Tunnel, _ func(Finding)) {
	t.IKEProposals = convertProposals(&im.report, c.Name, "ike", c.Get("ike", ""), c.Settings["ike"].From, true)
	t.ESPProposals = convertProposals(&im.report, c.Name, "esp", c.Get("esp", ""), c.Settings["esp"].From, false)
}

// strokeLifetimes computes what charon's stroke plugin makes of ikelifetime,
// lifetime, margintime and rekeyfuzz: rekey (or reauthentication, reauth=yes)
// at ikelifetime - margintime, CHILD_SAs rekeyed at lifetime - margintime and
// expiring at lifetime, each minus a random part of up to margintime *
// rekeyfuzz / 100.
func (im *importer) strokeLifetimes(c Conn, t *gwv1alpha1.Tunnel, add func(Finding)) {
	dur := func(keys []string, def time.Duration) (time.Duration, string) {
		for _, k := range keys {
			if c.Has(k) {
				d, err := confDuration(c.Get(k, ""))
				if err != nil {
					add(Finding{Setting: k, Value: c.Get(k, ""), Outcome: Refused, From: c.Settings[k].From, Detail: err.Error() + ": the default applies"})
					return def, ""
				}
				return d, k
			}
		}
		return def, ""
	}
	ike, ikeKey := dur([]string{"ikelifetime"}, defIKELifetime)
	child, childKey := dur([]string{"lifetime", "keylife"}, defLifetime)
	margin, marginKey := dur([]string{"margintime", "rekeymargin"}, defMargin)
	fuzz := defFuzz
	if c.Has("rekeyfuzz") {
		if _, err := fmt.Sscanf(c.Get("rekeyfuzz", ""), "%d%%", &fuzz); err != nil {
			fuzz = defFuzz
		}
	}
	jitter := margin * time.Duration(fuzz) / 100
	rekey := ike - margin
	reauth := c.Get("reauth", yes) == yes
	if c.Get("rekey", yes) == "no" {
		t.IKELifetime = gwv1alpha1.IKELifetime{RekeyTime: apiDuration(0), ReauthTime: apiDuration(0), RandTime: apiDuration(0)}
		t.ChildLifetime = gwv1alpha1.ChildLifetime{RekeyTime: apiDuration(child), LifeTime: apiDuration(child + time.Second), RandTime: apiDuration(0)}
		add(Finding{Setting: "rekey", Value: "no", Outcome: Approximated, From: c.Settings["rekey"].From,
			Detail: "the VM never rekeyed (the peer rekeys or the SAs expire); the API cannot turn rekeying off for CHILD_SAs: the gateway rekeys them at lifetime and lets the IKE SA live (rekeyTime 0)"})
		return
	}
	if reauth || t.IKEVersion == 1 {
		t.IKELifetime = gwv1alpha1.IKELifetime{RekeyTime: apiDuration(0), ReauthTime: apiDuration(rekey), RandTime: apiDuration(jitter)}
	} else {
		t.IKELifetime = gwv1alpha1.IKELifetime{RekeyTime: apiDuration(rekey), ReauthTime: apiDuration(0), RandTime: apiDuration(jitter)}
	}
	t.ChildLifetime = gwv1alpha1.ChildLifetime{RekeyTime: apiDuration(child - margin), LifeTime: apiDuration(child), RandTime: apiDuration(jitter)}
	src := strings.Trim(strings.Join([]string{ikeKey, childKey, marginKey}, " "), " ")
	what := "rekeys"
	if reauth || t.IKEVersion == 1 {
		what = "reauthenticates (reauth=yes, the default; IKEv1 always)"
	}
	add(Finding{Setting: "ikelifetime/lifetime/margintime/rekeyfuzz", Value: fmt.Sprintf("%s/%s/%s/%d%%", ike, child, margin, fuzz),
		Outcome: Approximated, From: c.Settings[ikeKey].From,
		Detail: fmt.Sprintf("the VM %s the IKE SA %s after it is made, minus up to %s at random, and rekeys CHILD_SAs at %s (minus up to %s), expiring them at %s: the same times (%s); the IKE SA's hard end (over_time) is charon's default 10%% of it instead of margintime, which a peer notices only when a rekey fails", what, rekey, jitter, child-margin, jitter, child, cmp.Or(src, "daemon defaults"))})
}

func (im *importer) strokeDPD(c Conn, t *gwv1alpha1.Tunnel, add func(Finding)) {
	action := c.Get("dpdaction", "none")
	from := c.Settings["dpdaction"].From
	delay, err := confDuration(c.Get("dpddelay", "30s"))
	if err != nil {
		delay = defDPDDelay
	}
	switch action {
	case "none":
		t.DPD = gwv1alpha1.DPD{Delay: apiDuration(0)}
		add(Finding{Setting: "dpdaction", Value: action, Outcome: Converted, From: from, Detail: "dpdaction none (the default) sends no DPD: dpd.delay 0"})
		return
	case "clear", "restart":
		t.DPD = gwv1alpha1.DPD{Delay: apiDuration(delay), Action: action}
	case "hold", actTrap:
		t.DPD = gwv1alpha1.DPD{Delay: apiDuration(delay), Action: "trap"}
	default:
		add(Finding{Setting: "dpdaction", Value: action, Outcome: Refused, From: from, Detail: "not a dpdaction of strongSwan: DPD off"})
		t.DPD = gwv1alpha1.DPD{Delay: apiDuration(0)}
		return
	}
	add(Finding{Setting: "dpdaction/dpddelay", Value: action + "/" + delay.String(), Outcome: Converted, From: from,
		Detail: fmt.Sprintf("dpd action %s every %s", t.DPD.Action, delay)})
	switch {
	case t.IKEVersion == 1:
		timeout, err := confDuration(c.Get("dpdtimeout", "150s"))
		if err == nil {
			t.DPD.Timeout = apiDuration(timeout)
			add(Finding{Setting: "dpdtimeout", Value: c.Get("dpdtimeout", ""), Outcome: Converted, From: c.Settings["dpdtimeout"].From, Detail: "dpd.timeout " + timeout.String()})
		}
	case c.Has("dpdtimeout") && im.dialect == Libreswan:
		add(Finding{Setting: "dpdtimeout", Value: c.Get("dpdtimeout", ""), Outcome: Approximated, From: c.Settings["dpdtimeout"].From,
			Detail: "pluto declared an IKEv2 peer dead after dpdtimeout; charon does when its retransmissions of a check run out (165 s by strongSwan's defaults): the gateway acts later on a dead peer"})
	case c.Has("dpdtimeout"):
		add(Finding{Setting: "dpdtimeout", Value: c.Get("dpdtimeout", ""), Outcome: Converted, From: c.Settings["dpdtimeout"].From,
			Detail: "charon ignores dpdtimeout with IKEv2 (retransmissions decide): not carried"})
	}
}

func (im *importer) strokeMisc(c Conn, t *gwv1alpha1.Tunnel, add func(Finding)) {
	tries := c.Get("keyingtries", "3")
	switch {
	case t.StartAction == actStart && (tries == "%forever" || tries == "0"):
		add(Finding{Setting: "keyingtries", Value: tries, Outcome: Converted, From: c.Settings["keyingtries"].From, Detail: "startAction start retries for ever"})
	case t.StartAction == actStart:
		add(Finding{Setting: "keyingtries", Value: tries, Outcome: Approximated, From: c.Settings["keyingtries"].From,
			Detail: "the VM gave up after " + tries + " tries; the gateway (startAction start) retries for ever: the peer sees more IKE_SA_INIT attempts while it is down"})
	}
	closeAction := c.Get("closeaction", "none")
	want := map[string]string{"start": "restart", "trap": "hold", "respond": "none"}[t.StartAction]
	if closeAction == want || (want == "hold" && closeAction == "trap") || (want == "restart" && closeAction == "start") {
		add(Finding{Setting: "closeaction", Value: closeAction, Outcome: Converted, From: c.Settings["closeaction"].From})
	} else {
		add(Finding{Setting: "closeaction", Value: closeAction, Outcome: Approximated, From: c.Settings["closeaction"].From,
			Detail: "the gateway's close action follows startAction " + t.StartAction + " (" + want + "): when the peer closes the tunnel, the gateway acts so, where the VM did " + closeAction})
	}
	if c.Get("forceencaps", "no") == yes {
		t.ForceEncapsulation = true
		add(Finding{Setting: "forceencaps", Value: yes, Outcome: Converted, From: c.Settings["forceencaps"].From, Detail: "forceEncapsulation true"})
	}
	if t.IKEVersion == 2 && c.Get("mobike", yes) == yes {
		add(Finding{Setting: "mobike", Value: yes, Outcome: Approximated, From: c.Settings["mobike"].From,
			Detail: "the VM offered MOBIKE (the default); the gateway does not (mobike false): a site-to-site peer at a fixed address never uses it, but sees no MOBIKE_SUPPORTED notify"})
	}
	if f := c.Get("fragmentation", yes); f != yes {
		t.Fragmentation = f
		add(Finding{Setting: "fragmentation", Value: f, Outcome: Converted, From: c.Settings["fragmentation"].From})
	}
	im.strokeUnique(t, add)
}

// strokeUnique converts config setup's uniqueids.
func (im *importer) strokeUnique(t *gwv1alpha1.Tunnel, add func(Finding)) {
	switch u := im.setup("uniqueids", yes); u {
	case yes, "replace":
		t.Unique = gwv1alpha1.UniqueReplace
	case "keep":
		t.Unique = gwv1alpha1.UniqueKeep
	case "no":
		t.Unique = gwv1alpha1.UniqueNo
	default:
		t.Unique = gwv1alpha1.UniqueNo
		add(Finding{Setting: "uniqueids", Value: u, Outcome: Approximated, From: im.conf.Setup["uniqueids"].From,
			Detail: "uniqueids=never is unique no in the API: the gateway also replaces SAs on INITIAL_CONTACT"})
	}
}

// strokeSelectors converts leftsubnet/rightsubnet; false drops the tunnel.
func (im *importer) strokeSelectors(c Conn, t *gwv1alpha1.Tunnel, add func(Finding)) bool {
	local, okL := im.subnets(c, "leftsubnet", add)
	remote, okR := im.subnets(c, "rightsubnet", add)
	if !okL || !okR {
		return false
	}
	for _, l := range local {
		for _, r := range remote {
			t.TrafficSelectors = append(t.TrafficSelectors, gwv1alpha1.TrafficSelector{Local: gwv1alpha1.CIDR(l), Remote: gwv1alpha1.CIDR(r)})
		}
	}
	switch {
	case len(t.TrafficSelectors) == 1:
	case im.dialect == Libreswan:
		add(Finding{Setting: "leftsubnets/rightsubnets", Value: strings.Join(local, ",") + " / " + strings.Join(remote, ","), Outcome: Converted,
			Detail: "libreswan makes a connection per subnet pair: a CHILD_SA per pair (childSALayout PerSubnetPair)"})
	case t.IKEVersion == 2:
		t.ChildSALayout = gwv1alpha1.ChildSASingle
		add(Finding{Setting: "leftsubnet/rightsubnet", Value: strings.Join(local, ",") + " / " + strings.Join(remote, ","), Outcome: Converted,
			Detail: "one CHILD_SA carrying every subnet, as charon negotiated it (childSALayout Single)"})
	default:
		add(Finding{Setting: "leftsubnet/rightsubnet", Value: strings.Join(local, ",") + " / " + strings.Join(remote, ","), Outcome: Approximated,
			Detail: "IKEv1 negotiates one subnet pair per CHILD_SA; charon proposed the first pair only: the gateway negotiates a CHILD_SA per pair (childSALayout PerSubnetPair), so the peer sees a Quick Mode per pair"})
	}
	return len(t.TrafficSelectors) > 0
}

// subnets reads a leftsubnet/rightsubnet list ("a,b", "{a b}", "{a,b}").
func (im *importer) subnets(c Conn, key string, add func(Finding)) ([]string, bool) {
	raw := c.Get(key, "")
	tokens, skipped := strokeSubnets(raw)
	if im.dialect == Libreswan {
		tokens, skipped = strings.FieldsFunc(strings.Trim(raw, "{} "), func(r rune) bool { return r == ',' || r == ' ' }), nil
	}
	if len(skipped) > 0 {
		add(Finding{Setting: key, Value: strings.Join(skipped, " "), Outcome: Converted, From: c.Settings[key].From,
			Detail: "charon skipped it (its log: invalid subnet, skipped): the VM never carried it, so neither does the gateway; braces are libreswan's syntax"})
	}
	if len(tokens) == 0 {
		add(Finding{Setting: key, Value: raw, Outcome: Refused, Drops: true, From: c.Settings[key].From,
			Detail: "no valid " + key + ": a host-to-host conn (charon's dynamic selector) carries the VM's own address, which the gateway does not have"})
		return nil, false
	}
	var out []string
	for _, s := range tokens {
		p, err := netip.ParsePrefix(s)
		if err != nil && !strings.Contains(s, "/") {
			if a, e := netip.ParseAddr(s); e == nil {
				p, err = a.Prefix(a.BitLen())
			}
		}
		if err != nil || !p.Addr().Is4() || p.Masked() != p {
			add(Finding{Setting: key, Value: s, Outcome: Refused, Drops: true, From: c.Settings[key].From,
				Detail: "not an IPv4 subnet without host bits (the API's traffic selectors; protocol/port selectors and IPv6 are not in it)"})
			return nil, false
		}
		out = append(out, p.String())
	}
	add(Finding{Setting: key, Value: strings.Join(out, ","), Outcome: Converted, From: c.Settings[key].From})
	return out, true
}

// strokeSubnets splits a leftsubnet/rightsubnet value as charon's stroke
// plugin does: at commas, spaces trimmed; a token whose address does not
// parse (such as "{10.1.0.0/24" of libreswan's brace syntax) is skipped,
// and the prefix length is read up to its first non-digit ("24}" is 24).
// Measured with Debian's starter and charon 5.9.8: rightsubnet={a,b}
// carries b alone, {a b} nothing (a dynamic selector).
func strokeSubnets(v string) (valid, skipped []string) {
	for tok := range strings.SplitSeq(v, ",") {
		if tok = strings.TrimSpace(tok); tok == "" {
			continue
		}
		addr, bits, hasBits := strings.Cut(tok, "/")
		if hasBits {
			n := 0
			for n < len(bits) && bits[n] >= '0' && bits[n] <= '9' {
				n++
			}
			bits = bits[:n]
		}
		if _, err := netip.ParseAddr(addr); err != nil || (hasBits && bits == "") {
			skipped = append(skipped, tok)
			continue
		}
		if hasBits {
			addr += "/" + bits
		}
		valid = append(valid, addr)
	}
	return valid, skipped
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// tunnelName makes a conn name fit the API's tunnel names.
func tunnelName(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			return r
		}
		return '-'
	}, s)
	if len(s) > 32 {
		s = s[:32]
	}
	return strings.Trim(s, "-")
}
