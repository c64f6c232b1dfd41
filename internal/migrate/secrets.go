package migrate

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
)

// Errors of reading ipsec.secrets. They name the file, line and the
// entry's identities, never a secret.
const (
	errSecretsSeparator = "%s:%d: want '[IDS] : TYPE SECRET' (missing ':')"            //nolint:gosec // G101: an error message, no credential
	errSecretsType      = "%s:%d: want a secret type (PSK, RSA, ECDSA, ...) after ':'" //nolint:gosec // G101: an error message, no credential
	errSecretsQuote     = "%s:%d: the secret's closing quote is missing"               //nolint:gosec // G101: an error message, no credential
	errSecretsEncoding  = "%s:%d: the secret's 0x/0s encoding does not decode"         //nolint:gosec // G101: an error message, no credential
	errSecretsInclude   = "%s:%d: include %q"                                          //nolint:gosec // G101: an error message, no credential
)

// A Secret is one entry of ipsec.secrets: the identities it is for (none:
// any), its type (PSK, RSA, ECDSA, XAUTH, EAP, ...) and its value as
// strongSwan's parser reads it: for PSK the key's bytes; for RSA and ECDSA
// the private key's file name (relative to ipsec.d/private).
type Secret struct {
	IDs   []string
	Type  string
	Value []byte
	// From is "file:line".
	From string
}

// ReadIPsecSecrets reads name from fsys as charon's stroke plugin does: one
// entry per line, "[ID ...] : TYPE VALUE", '#' comments, "include GLOB"
// (relative to the including file). A PSK in double or single quotes is
// taken as written, without escapes (up to the same quote); an unquoted one
// is decoded from hex (0x...) or base64 (0s...), else taken as written. IDs
// may be quoted (a DN with spaces).
func ReadIPsecSecrets(fsys fs.FS, name string) ([]Secret, error) {
	var out []Secret
	return out, readSecretsFile(fsys, name, 0, &out)
}

func readSecretsFile(fsys fs.FS, name string, depth int, out *[]Secret) error {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "include "); ok && depth < 10 {
			matches, err := fs.Glob(fsys, path.Join(path.Dir(name), strings.TrimPrefix(strings.TrimSpace(rest), "/")))
			if err != nil {
				return fmt.Errorf(errSecretsInclude+": %w", name, n, rest, err)
			}
			sort.Strings(matches)
			for _, m := range matches {
				if err := readSecretsFile(fsys, m, depth+1, out); err != nil {
					return err
				}
			}
			continue
		}
		ids, rest, err := splitSecretIDs(line)
		if err != nil {
			return fmt.Errorf(errSecretsSeparator, name, n)
		}
		typ, value, _ := strings.Cut(strings.TrimSpace(rest), " ")
		if typ == "" {
			return fmt.Errorf(errSecretsType, name, n)
		}
		s := Secret{IDs: ids, Type: strings.ToUpper(typ), From: fmt.Sprintf("%s:%d", name, n)}
		if s.Value, err = secretValue(strings.TrimSpace(value)); err != nil {
			return fmt.Errorf(err.Error(), name, n)
		}
		*out = append(*out, s)
	}
	return sc.Err()
}

// splitSecretIDs returns the identities before the ':' separator (outside
// quotes) and the rest of the line.
func splitSecretIDs(line string) ([]string, string, error) {
	var ids []string
	var cur strings.Builder
	quote := rune(0)
	for i, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote = r
		case r == ' ' || r == '\t' || r == ':':
			if cur.Len() > 0 {
				ids = append(ids, cur.String())
				cur.Reset()
			}
			if r == ':' {
				return ids, line[i+1:], nil
			}
		default:
			cur.WriteRune(r)
		}
	}
	return nil, "", fmt.Errorf("no separator")
}

// secretValue decodes a secret as charon's stroke plugin does. Its errors
// are formats taking the file and line.
func secretValue(v string) ([]byte, error) {
	if v != "" && (v[0] == '"' || v[0] == '\'') {
		end := strings.IndexByte(v[1:], v[0])
		if end < 0 {
			return nil, fmt.Errorf("%s", errSecretsQuote)
		}
		return []byte(v[1 : 1+end]), nil
	}
	v, _, _ = strings.Cut(v, " ")
	if len(v) > 2 && (strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0s")) {
		b, err := swanctl.DecodeSecret(v)
		if err != nil {
			return nil, fmt.Errorf("%s", errSecretsEncoding)
		}
		return b, nil
	}
	return []byte(v), nil
}

// Identity match qualities, charon's (identification.h): an owner equal to
// the identity matches perfectly, a pattern with one wildcard less so, an
// entry without owners (or %any) matches any identity.
const (
	matchNone     = 0
	matchAny      = 1
	matchWildcard = 19
	matchPerfect  = 20
)

// SelectPSK returns the index in secrets of the pre-shared key charon picks
// for an IKE SA between the identities local and remote, or -1: among the
// PSK entries that match local or remote (an entry without identities
// matches both as "any"), the best match of remote wins, then the best
// match of local (charon's credential manager, get_shared), then the last
// in the file: charon's in-memory credential set inserts each key it loads
// first (mem_cred's add_shared_unique), so it enumerates them last to first.
func SelectPSK(secrets []Secret, local, remote string) int {
	best, bestMe, bestOther := -1, matchNone, matchNone
	for i := len(secrets) - 1; i >= 0; i-- {
		s := secrets[i]
		if s.Type != "PSK" {
			continue
		}
		me, other := ownerMatch(s.IDs, local), ownerMatch(s.IDs, remote)
		if me == matchNone && other == matchNone {
			continue
		}
		if other > bestOther || (other == bestOther && me > bestMe) {
			best, bestMe, bestOther = i, me, other
		}
	}
	return best
}

// ownerMatch is the best match of id among owners (charon's has_owner).
func ownerMatch(owners []string, id string) int {
	if len(owners) == 0 {
		return matchAny
	}
	best := matchNone
	for _, o := range owners {
		best = max(best, idMatch(o, id))
	}
	return best
}

// idMatch says how well the owner identity o matches id.
func idMatch(o, id string) int {
	switch a, b := normalizeID(o), normalizeID(id); {
	case a == anyID || a == "0.0.0.0":
		return matchAny
	case a == b:
		return matchPerfect
	case strings.Contains(a, "*"):
		if ok, _ := path.Match(a, b); ok {
			return matchWildcard
		}
	}
	return matchNone
}

// normalizeID writes an identity the way charon compares it: an FQDN's
// leading '@' (no DNS lookup) dropped and FQDNs and emails compared without
// case; DNs with their RDNs separated by ", ".
func normalizeID(id string) string {
	id = strings.TrimSpace(id)
	if strings.HasPrefix(id, "@") && !strings.HasPrefix(id, "@@") && !strings.HasPrefix(id, "@#") {
		id = id[1:]
	}
	if strings.Contains(id, "=") {
		parts := strings.FieldsFunc(id, func(r rune) bool { return r == ',' || r == '/' })
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return strings.Join(parts, ", ")
	}
	return strings.ToLower(id)
}
