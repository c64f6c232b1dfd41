package migrate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// An Outcome is what the import made of one setting.
type Outcome string

// Outcomes of a setting.
const (
	// Converted: the IPsecGateway carries the setting; the peer sees what
	// it saw from the VM.
	Converted Outcome = "converted"
	// Approximated: the IPsecGateway carries something close; Detail says
	// how and what the peer would notice.
	Approximated Outcome = "approximated"
	// Refused: the IPsecGateway cannot carry it; Detail says why. A
	// refusal that Drops the tunnel leaves the tunnel out of the output.
	Refused Outcome = "refused"
)

// A Finding is one setting of the VM's configuration and what became of
// it. Value never holds a secret.
type Finding struct {
	// Tunnel is the conn (or swanctl connection) the setting belongs to;
	// empty for the file's global settings.
	Tunnel  string  `json:"tunnel,omitempty"`
	Setting string  `json:"setting"`
	Value   string  `json:"value,omitempty"`
	Outcome Outcome `json:"outcome"`
	Detail  string  `json:"detail,omitempty"`
	// Drops says the tunnel is left out of the IPsecGateway.
	Drops bool `json:"dropsTunnel,omitempty"`
	// From is "file:line" where the setting was written; empty for a
	// default the daemon applied.
	From string `json:"from,omitempty"`
}

// A Report lists every setting of an import.
type Report struct {
	Source   string    `json:"source"`
	Dialect  Dialect   `json:"dialect"`
	Findings []Finding `json:"findings"`
	// Counts is the number of findings per outcome.
	Counts map[Outcome]int `json:"counts"`
}

// add appends a finding.
func (r *Report) add(f Finding) {
	r.Findings = append(r.Findings, f)
	if r.Counts == nil {
		r.Counts = map[Outcome]int{}
	}
	r.Counts[f.Outcome]++
}

// Refusals is the number of refused settings.
func (r *Report) Refusals() int { return r.Counts[Refused] }

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r for a human: one line per finding, grouped by tunnel,
// then the counts.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "import of %s (%s)\n", r.Source, r.Dialect)
	last := "\x00"
	for _, f := range r.Findings {
		if f.Tunnel != last {
			last = f.Tunnel
			if f.Tunnel == "" {
				b.WriteString("\nglobal:\n")
			} else {
				fmt.Fprintf(&b, "\ntunnel %s:\n", f.Tunnel)
			}
		}
		v := ""
		if f.Value != "" {
			v = "=" + f.Value
		}
		from := ""
		if f.From != "" {
			from = " (" + f.From + ")"
		} else {
			from = " (daemon default)"
		}
		fmt.Fprintf(&b, "  %-12s %s%s%s\n", f.Outcome, f.Setting, v, from)
		if f.Detail != "" {
			fmt.Fprintf(&b, "               %s\n", f.Detail)
		}
		if f.Drops {
			b.WriteString("               the tunnel is left out of the IPsecGateway\n")
		}
	}
	fmt.Fprintf(&b, "\n%d converted, %d approximated, %d refused\n", r.Counts[Converted], r.Counts[Approximated], r.Counts[Refused])
	_, err := io.WriteString(w, b.String())
	return err
}
