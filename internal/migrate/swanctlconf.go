package migrate

import (
	"fmt"
	"io/fs"
	"net/netip"
	"strings"
	"time"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
)

// Swanctl is strongSwan's swanctl.conf (VICI).
const Swanctl Dialect = "swanctl.conf"

// Errors of reading swanctl.conf.
const errReadSwanctl = "cannot read swanctl.conf %s"

// swanctl.conf's defaults that change what a peer sees
// (https://docs.strongswan.org/docs/5.9/swanctl/swanctlConf.html).
const (
	swRekeyTime      = "4h"
	swChildRekeyTime = "1h"
)

// ImportSwanctlConf imports name (swanctl.conf) from fsys: its connections
// and, from its secrets section, the PSK charon picks for each. Sections of
// the same name are merged, later settings winning, as swanctl's parser
// does. Certificates are not imported yet: such connections are refused.
func ImportSwanctlConf(fsys fs.FS, name string, opts Options) (*Result, error) {
	if a, err := netip.ParseAddr(opts.FloatingIP); err != nil || !a.Is4() {
		return nil, fmt.Errorf(errFloatingIP, opts.FloatingIP)
	}
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf(errReadSwanctl+": %w", name, err)
	}
	doc, err := swanctl.Parse(data)
	if err != nil {
		return nil, fmt.Errorf(errReadSwanctl+": %w", name, err)
	}
	merge(doc)
	im := &importer{fsys: fsys, opts: opts, dialect: Swanctl, psks: map[string][]byte{}, tls: map[string][2][]byte{},
		report: Report{Source: name, Dialect: Swanctl}}
	if s := doc.Lookup("secrets"); s != nil {
		for _, sec := range s.Sections {
			im.secrets = append(im.secrets, swanctlSecret(sec))
		}
	}
	res := &Result{PSKs: im.psks, TLS: im.tls, Sources: map[string]string{}}
	if conns := doc.Lookup("connections"); conns != nil {
		for _, c := range conns.Sections {
			if t := im.swanctlTunnel(c); t != nil {
				res.Tunnels = append(res.Tunnels, *t)
				res.Sources[t.Name] = c.Name
			}
		}
	}
	res.Report = im.report
	return res, nil
}

// merge folds subsections of the same name into the first, recursively.
func merge(s *swanctl.Section) {
	var out []*swanctl.Section
	seen := map[string]*swanctl.Section{}
	for _, sub := range s.Sections {
		if first, ok := seen[sub.Name]; ok {
			first.Settings = append(first.Settings, sub.Settings...)
			first.Sections = append(first.Sections, sub.Sections...)
			continue
		}
		seen[sub.Name] = sub
		out = append(out, sub)
	}
	s.Sections = out
	for _, sub := range s.Sections {
		merge(sub)
	}
}

// get is the last value of key in s (a later one wins), or def.
func get(s *swanctl.Section, key, def string) string {
	v := def
	if s == nil {
		return v
	}
	for _, kv := range s.Settings {
		if kv.Key == key {
			v = kv.Value
		}
	}
	return v
}

// swanctlSecret is a secrets subsection (ike-*: id*, secret) as a Secret.
func swanctlSecret(s *swanctl.Section) Secret {
	out := Secret{Type: "OTHER", From: "secrets." + s.Name}
	if strings.HasPrefix(s.Name, "ike") {
		out.Type = "PSK"
	}
	for _, kv := range s.Settings {
		switch {
		case strings.HasPrefix(kv.Key, "id"):
			out.IDs = append(out.IDs, kv.Value)
		case kv.Key == "secret":
			b, err := swanctl.DecodeSecret(kv.Value)
			if err != nil {
				b = nil
			}
			out.Value = b
		}
	}
	return out
}

// swanctlTunnel converts one connection; nil when a refusal drops it.
func (im *importer) swanctlTunnel(c *swanctl.Section) *gwv1alpha1.Tunnel {
	name := c.Name
	add := func(f Finding) { f.Tunnel = name; im.report.add(f) }
	t := &gwv1alpha1.Tunnel{Name: tunnelName(name)}
	from := "connections." + name
	drop := false
	refuse := func(k, v, why string) {
		add(Finding{Setting: k, Value: v, Outcome: Refused, Drops: true, From: from, Detail: why})
		drop = true
	}
	switch v := get(c, "version", "0"); v {
	case "1", "2":
		t.IKEVersion = map[string]int32{"1": 1, "2": 2}[v]
		add(Finding{Setting: "version", Value: v, Outcome: Converted, From: from})
	default:
		t.IKEVersion = 2
		add(Finding{Setting: "version", Value: v, Outcome: Approximated, From: from,
			Detail: "0 (the default) initiates IKEv2 and answers either version: ikeVersion 2; a peer that initiates IKEv1 fails to connect"})
	}
	remote := strings.Split(get(c, "remote_addrs", "%any"), ",")
	if len(remote) != 1 || strings.TrimSpace(remote[0]) == anyID {
		refuse("remote_addrs", get(c, "remote_addrs", anyID), "the API's tunnels have one peer address (a road warrior's %any or several addresses are not in it)")
	}
	t.Peer.Address = strings.TrimSpace(remote[0])
	for _, k := range []string{"pools", "vips", "aggressive"} {
		if v := get(c, k, ""); v != "" && v != "no" {
			refuse(k, v, "virtual IPs and aggressive mode are not in the API")
		}
	}
	t.IKEProposals = im.swanctlProposals(name, "proposals", get(c, "proposals", "default"), from, true)
	swanctlIKE(c, t, add, from)
	if drop || !im.swanctlAuth(c, t, add, from) || !im.swanctlChildren(c, t, add, from) {
		delete(im.psks, t.Name) // a dropped tunnel's key goes nowhere
		return nil
	}
	return t
}

// swanctlIKE converts the IKE SA's lifetimes, DPD, encapsulation, MOBIKE
// and uniqueness policy.
func swanctlIKE(c *swanctl.Section, t *gwv1alpha1.Tunnel, add func(Finding), from string) {
	rekey, err1 := time.ParseDuration(get(c, "rekey_time", swRekeyTime))
	reauth, err2 := time.ParseDuration(get(c, "reauth_time", "0s"))
	if err1 == nil && err2 == nil {
		t.IKELifetime = gwv1alpha1.IKELifetime{RekeyTime: apiDuration(rekey), ReauthTime: apiDuration(reauth)}
		if v := get(c, "rand_time", ""); v != "" {
			if d, err := time.ParseDuration(v); err == nil {
				t.IKELifetime.RandTime = apiDuration(d)
			}
		}
		add(Finding{Setting: "rekey_time/reauth_time/rand_time", Value: rekey.String() + "/" + reauth.String() + "/" + get(c, "rand_time", "default"), Outcome: Converted, From: from})
	}
	if get(c, "over_time", "") != "" {
		add(Finding{Setting: "over_time", Value: get(c, "over_time", ""), Outcome: Approximated, From: from,
			Detail: "not in the API: charon's default, 10% of the longer of rekey_time and reauth_time; a peer notices only when a rekey fails"})
	}
	dpd, err := time.ParseDuration(get(c, "dpd_delay", "0s"))
	if err == nil {
		t.DPD.Delay = apiDuration(dpd)
		add(Finding{Setting: "dpd_delay", Value: get(c, "dpd_delay", "0 (default)"), Outcome: Converted, From: from})
	}
	if get(c, "encap", "no") == yes {
		t.ForceEncapsulation = true
		add(Finding{Setting: "encap", Value: yes, Outcome: Converted, From: from})
	}
	if t.IKEVersion == 2 && get(c, "mobike", yes) == yes {
		add(Finding{Setting: "mobike", Value: yes, Outcome: Approximated, From: from,
			Detail: "the VM offered MOBIKE (the default); the gateway does not: a peer at a fixed address never uses it"})
	}
	if v := get(c, "unique", "no"); v != "no" {
		t.Unique = v
		add(Finding{Setting: "unique", Value: v, Outcome: Converted, From: from})
	}
}

// swanctlProposals converts a swanctl proposals list, whose keyword
// "default" stands for charon's defaults.
func (im *importer) swanctlProposals(tunnel, setting, v, from string, ike bool) []string {
	var configured []string
	hasDefault := false
	for p := range strings.SplitSeq(v, ",") {
		switch p = strings.TrimSpace(p); p {
		case "":
		case "default":
			hasDefault = true
		default:
			configured = append(configured, p)
		}
	}
	list := strings.Join(configured, ",")
	if !hasDefault {
		list += "!"
	}
	if len(configured) == 0 {
		list = ""
	}
	return convertProposals(&im.report, tunnel, setting, list, from, ike)
}

// swanctlAuth converts the local and remote sections (one round each, PSK).
func (im *importer) swanctlAuth(c *swanctl.Section, t *gwv1alpha1.Tunnel, add func(Finding), from string) bool {
	local, remote := c.Lookup("local"), c.Lookup("remote")
	for _, s := range c.Sections {
		if (strings.HasPrefix(s.Name, "local-") || strings.HasPrefix(s.Name, "remote-")) && s != local && s != remote {
			add(Finding{Setting: s.Name, Outcome: Refused, Drops: true, From: from, Detail: "several authentication rounds (XAUTH, EAP) are not in the API"})
			return false
		}
	}
	if get(local, "auth", "pubkey") != "psk" || get(remote, "auth", "pubkey") != "psk" {
		add(Finding{Setting: "local.auth/remote.auth", Value: get(local, "auth", "pubkey") + "/" + get(remote, "auth", "pubkey"), Outcome: Refused, Drops: true, From: from,
			Detail: "the swanctl.conf import converts pre-shared keys only so far; certificates come from ipsec.conf imports"})
		return false
	}
	addr := get(c, "local_addrs", im.opts.VMAddress)
	lid := get(local, "id", addr)
	if _, v := parseID(lid); v == im.opts.FloatingIP {
		add(Finding{Setting: "local.id", Value: lid, Outcome: Converted, From: from, Detail: "the floating IP, which the gateway presents"})
	} else {
		add(Finding{Setting: "local.id", Value: lid, Outcome: Refused, From: from,
			Detail: "the VM presented " + lid + "; the gateway presents its floating IP " + im.opts.FloatingIP + " (the API has no other local identity for a PSK tunnel): a peer that checks it fails IKE_AUTH at cutover until it accepts " + im.opts.FloatingIP})
	}
	rid := swanctlRemoteID(remote, t, add, from)
	i := SelectPSK(im.secrets, lid, rid)
	if i < 0 || len(im.secrets[i].Value) == 0 {
		add(Finding{Setting: "secrets", Outcome: Refused, Drops: true, From: from, Detail: "no ike secret matches " + lid + " and " + rid})
		return false
	}
	im.psks[t.Name] = im.secrets[i].Value
	t.PreSharedKeySecretRef = pskRef(im.pskSecretName(), t.Name)
	add(Finding{Setting: "secrets", Value: im.secrets[i].From, Outcome: Converted, From: im.secrets[i].From,
		Detail: "the PSK charon picks for " + lid + " and " + rid + ", into Secret " + im.pskSecretName() + " key " + t.Name})
	return true
}

// swanctlRemoteID converts remote.id and returns it.
func swanctlRemoteID(remote *swanctl.Section, t *gwv1alpha1.Tunnel, add func(Finding), from string) string {
	rid := get(remote, "id", t.Peer.Address)
	k, v := parseID(rid)
	switch {
	case v == t.Peer.Address:
		add(Finding{Setting: "remote.id", Value: rid, Outcome: Converted, From: from, Detail: "the peer's address (peer.id left out)"})
	case (k == idIPv4 || k == idFQDN || k == idEmail) && peerIDPattern.MatchString(v):
		t.Peer.ID = v
		add(Finding{Setting: "remote.id", Value: rid, Outcome: Converted, From: from, Detail: "peer.id " + v})
	default:
		add(Finding{Setting: "remote.id", Value: rid, Outcome: Refused, From: from,
			Detail: "the API's peer.id takes an IPv4 address, a DNS name or user@domain, not " + string(k) + " (waits on the API: identities it refuses)"})
	}
	return rid
}

// swanctlChildren converts the children: their traffic selectors into the
// tunnel's, the first child's proposals, lifetimes and actions.
func (im *importer) swanctlChildren(c *swanctl.Section, t *gwv1alpha1.Tunnel, add func(Finding), from string) bool {
	children := c.Lookup("children")
	if children == nil || len(children.Sections) == 0 {
		add(Finding{Setting: "children", Outcome: Refused, Drops: true, From: from, Detail: "no CHILD_SA: nothing to carry"})
		return false
	}
	onePair := true
	for i, ch := range children.Sections {
		cf := from + ".children." + ch.Name
		if !childAllowed(ch, add, cf) {
			return false
		}
		pair, ok := childSelectors(ch, t, add, cf)
		if !ok {
			return false
		}
		onePair = onePair && pair
		if i == 0 {
			im.swanctlFirstChild(c.Name, ch, t, add, cf)
		}
	}
	if len(children.Sections) > 1 || !onePair {
		add(Finding{Setting: "children", Value: fmt.Sprint(len(children.Sections)), Outcome: Approximated, From: from,
			Detail: "a CHILD_SA per subnet pair (childSALayout PerSubnetPair) with the first child's proposals, lifetimes and actions; the CHILD_SAs' names differ (not on the wire)"})
	}
	return true
}

// childAllowed reports a child's settings the API cannot carry; false when
// one drops the tunnel.
func childAllowed(ch *swanctl.Section, add func(Finding), cf string) bool {
	for _, k := range []string{"updown", "mark_in", "mark_out", "if_id_in", "if_id_out", "set_mark_in", "set_mark_out"} {
		if v := get(ch, k, ""); v != "" {
			add(Finding{Setting: k, Value: v, Outcome: Refused, Drops: k != "updown", From: cf,
				Detail: "updown scripts, marks and interface IDs live outside the API (a route-based tunnel is mode route with routes)"})
			if k != "updown" {
				return false
			}
		}
	}
	if m := get(ch, "mode", "tunnel"); m != "tunnel" {
		add(Finding{Setting: "mode", Value: m, Outcome: Refused, Drops: true, From: cf, Detail: "only tunnel mode is in the API"})
		return false
	}
	return true
}

// childSelectors appends a child's traffic selector pairs to t; pair says
// it has exactly one, ok false drops the tunnel.
func childSelectors(ch *swanctl.Section, t *gwv1alpha1.Tunnel, add func(Finding), cf string) (pair, ok bool) {
	local, remote := strings.Split(get(ch, "local_ts", "dynamic"), ","), strings.Split(get(ch, "remote_ts", "dynamic"), ",")
	for _, l := range local {
		for _, r := range remote {
			lp, err1 := netip.ParsePrefix(strings.TrimSpace(l))
			rp, err2 := netip.ParsePrefix(strings.TrimSpace(r))
			if err1 != nil || err2 != nil || !lp.Addr().Is4() || !rp.Addr().Is4() {
				add(Finding{Setting: "local_ts/remote_ts", Value: l + " " + r, Outcome: Refused, Drops: true, From: cf,
					Detail: "not IPv4 subnets (dynamic, ranges, protocol/port selectors and IPv6 are not in the API)"})
				return false, false
			}
			t.TrafficSelectors = append(t.TrafficSelectors, gwv1alpha1.TrafficSelector{Local: gwv1alpha1.CIDR(lp.Masked().String()), Remote: gwv1alpha1.CIDR(rp.Masked().String())})
		}
	}
	add(Finding{Setting: "local_ts/remote_ts", Value: get(ch, "local_ts", "") + " / " + get(ch, "remote_ts", ""), Outcome: Converted, From: cf})
	return len(local) == 1 && len(remote) == 1, true
}

// swanctlFirstChild converts the first child's proposals, lifetimes and
// actions, which the tunnel's CHILD_SAs share.
func (im *importer) swanctlFirstChild(conn string, ch *swanctl.Section, t *gwv1alpha1.Tunnel, add func(Finding), cf string) {
	t.ESPProposals = im.swanctlProposals(conn, "esp_proposals", get(ch, "esp_proposals", "default"), cf, false)
	if d, err := time.ParseDuration(get(ch, "rekey_time", swChildRekeyTime)); err == nil {
		t.ChildLifetime.RekeyTime = apiDuration(d)
	}
	if v := get(ch, "life_time", ""); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			t.ChildLifetime.LifeTime = apiDuration(d)
		}
	}
	if v := get(ch, "rand_time", ""); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			t.ChildLifetime.RandTime = apiDuration(d)
		}
	}
	add(Finding{Setting: "rekey_time/life_time/rand_time", Value: get(ch, "rekey_time", swChildRekeyTime) + "/" + get(ch, "life_time", "default") + "/" + get(ch, "rand_time", "default"), Outcome: Converted, From: cf})
	start := get(ch, "start_action", "none")
	t.StartAction = map[string]string{"start": actStart, actTrap: actTrap, "none": "respond"}[start]
	add(Finding{Setting: "start_action", Value: start, Outcome: Converted, From: cf, Detail: "startAction " + t.StartAction})
	if a := get(ch, "dpd_action", "clear"); t.DPD.Delay != nil && *t.DPD.Delay != "0" {
		t.DPD.Action = a
		add(Finding{Setting: "dpd_action", Value: a, Outcome: Converted, From: cf})
	}
}
