package status

import (
	"regexp"
	"strings"
)

// How charon (strongSwan 5.9.8) reports a failed negotiation over VICI.
//
// Neither ike-updown nor child-updown carry a reason: a failed IKE SA shows
// as an ike-updown event without up=yes whose state is still CONNECTING,
// and nothing else. The reason is only in charon's log, which the vici
// plugin streams as "log" events ({group, level, thread, ikesa-name,
// ikesa-uniqueid, msg}) at levels up to 1 (the ones below were all seen at
// level 1 with two real charons):
//
//   - The initiator logs the error notify it received:
//     "received AUTHENTICATION_FAILED notify error",
//     "received NO_PROPOSAL_CHOSEN notify error" (IKE proposals, in
//     IKE_SA_INIT) and "received NO_PROPOSAL_CHOSEN notify, no CHILD_SA
//     built" (ESP proposals, in IKE_AUTH); an IKEv1 initiator says it the
//     other way round, "received NO_PROPOSAL_CHOSEN error notify" (an
//     informational of a restarted peer whose configuration is not
//     loaded yet, in Main Mode).
//   - The responder (the gateway, usually) logs the notify it sends, in
//     strongSwan's short notify names:
//     "generating IKE_AUTH response 1 [ N(AUTH_FAILED) ]",
//     "generating IKE_SA_INIT response 0 [ N(NO_PROP) ]",
//     "generating IKE_AUTH response 1 [ IDr AUTH N(MOBIKE_SUP) N(NO_ADD_ADDR) N(NO_PROP) ]".
//     (It also logs "tried 1 shared key for … but MAC mismatched",
//     "received proposals unacceptable" or "no acceptable proposal found";
//     the notify is the more general signal: every authentication failure
//     answers AUTH_FAILED.)
//   - Retransmissions that run out log "giving up after N retransmits"
//     (seen with the peer's charon stopped, under the connection's name).
//   - With certificates, a peer whose certificate charon cannot trust
//     logs "no trusted ECDSA public key found for '<peer's id>'" (the
//     initiator then sends N(AUTH_FAILED) in an INFORMATIONAL request, the
//     responder in its IKE_AUTH response), and a local identity without a
//     certificate and key "no private key found for '<id>'".
//
// A responder's IKE SA has no connection name until IKE_AUTH selects a peer
// config: its log events carry ikesa-name "(unnamed)", so an IKE_SA_INIT
// NO_PROPOSAL_CHOSEN of the responder is attributed by the peer's address
// (see Watcher).

// Errors the agent reports as a tunnel's LastError, in IKEv2's notify names
// (RFC 7296) where there is one.
const (
	ErrAuthenticationFailed = "AUTHENTICATION_FAILED"
	ErrNoProposalChosen     = "NO_PROPOSAL_CHOSEN"
	ErrTSUnacceptable       = "TS_UNACCEPTABLE"
	// ErrRetransmitTimeout is not a notify: the peer did not answer.
	ErrRetransmitTimeout = "RETRANSMIT_TIMEOUT"
	// ErrPeerCertificateUntrusted is not a notify: charon found no trusted
	// certificate for the peer's identity ("no trusted ECDSA public key
	// found for '<id>'"): the peer's certificate does not chain to the
	// tunnel's certificate.peerCA, is expired, or does not carry
	// certificate.remoteId.
	ErrPeerCertificateUntrusted = "PEER_CERTIFICATE_UNTRUSTED"
	// ErrNoPrivateKey is not a notify: charon has no certificate and
	// private key for the gateway's identity ("no private key found for
	// '<id>'"): certificate.localId is not in the gateway's certificate.
	ErrNoPrivateKey = "NO_PRIVATE_KEY"
)

var (
	reReceivedNotify = regexp.MustCompile(`^received ([A-Z0-9_]+) (?:notify(?: error|, no CHILD_SA built)|error notify)`)
	reGenerated      = regexp.MustCompile(`^generating \S+ response \d+ \[(.*)\]$`)
	reGaveUp         = regexp.MustCompile(`^giving up after \d+ retransmits`)
	reInitiating     = regexp.MustCompile(`^(\S+) is initiating an IKE_SA$`)
	reUntrusted      = regexp.MustCompile(`^no trusted \S+ public key found for '`)
	reNoPrivateKey   = regexp.MustCompile(`^no private key found for '`)
)

// shortNotify maps strongSwan's abbreviated notify names (as in its message
// summaries) of failures to the RFC 7296 names.
var shortNotify = map[string]string{
	"N(AUTH_FAILED)": ErrAuthenticationFailed,
	"N(NO_PROP)":     ErrNoProposalChosen,
	"N(TS_UNACCEPT)": ErrTSUnacceptable,
}

// ErrorFromLog returns the failure a charon log message reports, or "" when
// it reports none. See the comment above for the messages recognised.
func ErrorFromLog(msg string) string {
	msg = strings.TrimSpace(msg)
	if m := reReceivedNotify.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	if m := reGenerated.FindStringSubmatch(msg); m != nil {
		for _, f := range strings.Fields(m[1]) {
			if e, ok := shortNotify[f]; ok {
				return e
			}
		}
		return ""
	}
	switch {
	case reGaveUp.MatchString(msg):
		return ErrRetransmitTimeout
	case reUntrusted.MatchString(msg):
		return ErrPeerCertificateUntrusted
	case reNoPrivateKey.MatchString(msg):
		return ErrNoPrivateKey
	}
	return ""
}
