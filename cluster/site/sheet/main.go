// Command sheet writes the client site's swanctl.conf (one connection and
// its secret) from the client's parameter sheet, test/tunnel's ClientSheet,
// which writes it by hand, independently of the provider's rendering. The
// sheet's values come from the flags; the PSK from a file.
//
// Usage (cluster/site/up.sh runs it):
//
//	sheet -o swanctl.conf -psk-file psk -local 198.51.100.7 -remote 203.0.113.10 \
//	  -local-ts 192.168.10.0/24 -remote-ts 100.64.0.0/24 [-name branch-a] \
//	  [-ike aes256-sha256-modp2048] [-esp aes256gcm16] [-start-action start] \
//	  [-dpd-delay 3s] [-dpd-action restart]
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/ipsecgw/provider-ipsec/test/topology"
)

func main() {
	out := flag.String("o", "", "the swanctl.conf to write")
	pskFile := flag.String("psk-file", "", "file holding the pre-shared key (one line)")
	name := flag.String("name", "branch-a", "the connection's name, also its CHILD_SA's")
	local := flag.String("local", "", "the client site's public address, also its IKE identity")
	remote := flag.String("remote", "", "the provider's gateway address (the floating IP), also its IKE identity")
	localTS := flag.String("local-ts", "", "the client's subnets, comma-separated")
	remoteTS := flag.String("remote-ts", "", "the provider side's subnets, comma-separated")
	ike := flag.String("ike", "aes256-sha256-modp2048", "IKE (phase 1) proposals, comma-separated")
	esp := flag.String("esp", "aes256gcm16", "ESP (phase 2) proposals, comma-separated")
	startAction := flag.String("start-action", "start", "start_action of the CHILD_SA: none, start or trap")
	dpdDelay := flag.String("dpd-delay", "3s", "dead peer detection interval, empty for none")
	dpdAction := flag.String("dpd-action", "restart", "what a dead peer leads to: clear, trap or restart")
	keyingTries := flag.String("keyingtries", "0", "how often to try the IKE SA before giving up, 0 for ever")
	closeAction := flag.String("close-action", "start", "what the peer closing the CHILD_SA leads to: none, trap or start")
	flag.Parse()
	if err := write(*out, *pskFile, topology.ClientSheet{
		Name:          *name,
		LocalAddress:  *local,
		RemoteAddress: *remote,
		IKEProposals:  strings.Split(*ike, ","),
		ESPProposals:  strings.Split(*esp, ","),
		Children:      []topology.ClientChild{{Name: *name, LocalTS: strings.Split(*localTS, ","), RemoteTS: strings.Split(*remoteTS, ",")}},
		StartAction:   *startAction,
		DPDDelay:      *dpdDelay,
		DPDAction:     *dpdAction,
		KeyingTries:   *keyingTries,
		CloseAction:   *closeAction,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "sheet:", err)
		os.Exit(1)
	}
}

// write reads the PSK into s and writes s's swanctl.conf to out, readable
// by its owner only.
func write(out, pskFile string, s topology.ClientSheet) error {
	if out == "" || pskFile == "" || s.LocalAddress == "" || s.RemoteAddress == "" {
		return errors.New("-o, -psk-file, -local and -remote are required")
	}
	psk, err := os.ReadFile(pskFile)
	if err != nil {
		return err
	}
	s.PSK = string(bytes.TrimSpace(psk))
	if s.PSK == "" || strings.ContainsAny(s.PSK, "\"\n") {
		return fmt.Errorf("the PSK in %s must be one line, not empty, without double quotes", pskFile)
	}
	return os.WriteFile(out, s.SwanctlConf(), 0o600)
}
