// Package openstack builds authenticated gophercloud clients from a
// ProviderConfig.
package openstack

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"iter"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"gopkg.in/yaml.v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients"
)

// Credentials are what a client needs to authenticate to Keystone and find
// its service endpoints.
type Credentials struct {
	// Auth holds the identity endpoint and the password, application
	// credential or token to present, with its scope.
	Auth gophercloud.AuthOptions
	// Endpoint selects region and interface in the service catalog.
	Endpoint gophercloud.EndpointOpts
	// TLS verifies the API endpoints; RootCAs nil means the system roots.
	TLS *tls.Config
	// fingerprint identifies the inputs these credentials were parsed
	// from, secrets included; it never leaves memory.
	fingerprint [sha256.Size]byte
}

// CloudOptions select one cloud of a clouds.yaml document and override parts
// of it.
type CloudOptions struct {
	// Cloud is the name of the entry under `clouds:`. Required.
	Cloud string
	// Region overrides region_name when not empty.
	Region string
	// Interface overrides interface ("public", "internal" or "admin") when
	// not empty.
	Interface string
	// CABundle, PEM, replaces the system roots and any cacert path when not
	// empty.
	CABundle []byte
}

// ParseCloudsYAML parses doc as a clouds.yaml document, in the format of the
// OpenStack client configuration
// (https://docs.openstack.org/python-openstackclient/latest/configuration/),
// with gophercloud's openstack/config/clouds, and returns the credentials of
// the cloud o.Cloud. Nothing is read from the environment or, except for a
// cacert path written in doc, from the file system: secure.yaml and
// clouds-public.yaml are not consulted. The cloud's auth_type (see
// authMethod) decides how it authenticates, and the fields that method needs
// are checked here, before any request. The errors returned say what is
// wrong with the document, name the field to add or fix, and never contain
// its secrets.
func ParseCloudsYAML(doc []byte, o CloudOptions) (*Credentials, error) {
	if o.Cloud == "" {
		return nil, errors.New("no cloud name given: set spec.credentials.cloud to an entry under clouds: in clouds.yaml")
	}
	// Checked here because gophercloud's parser answers a missing cloud
	// with an error that does not list the alternatives, and a cloud
	// without auth with a nil pointer dereference.
	var parsed struct {
		Clouds map[string]struct {
			AuthType string         `yaml:"auth_type"`
			Auth     map[string]any `yaml:"auth"`
		} `yaml:"clouds"`
	}
	if err := yaml.Unmarshal(doc, &parsed); err != nil {
		return nil, fmt.Errorf("clouds.yaml is not valid YAML: %s", redactYAMLError(err))
	}
	cloud, ok := parsed.Clouds[o.Cloud]
	if !ok {
		return nil, fmt.Errorf("clouds.yaml has no cloud %q under clouds: (clouds present: %s)", o.Cloud, cloudNames(maps.Keys(parsed.Clouds)))
	}
	if cloud.Auth["auth_url"] == nil {
		return nil, fmt.Errorf("cloud %q of clouds.yaml has no auth.auth_url", o.Cloud)
	}
	// Every option that Parse would otherwise take from the environment
	// (OS_CLOUD, OS_REGION_NAME, OS_INTERFACE) is given explicitly.
	auth, ep, tlsCfg, err := clouds.Parse(
		clouds.WithCloudsYAML(bytes.NewReader(doc)),
		clouds.WithCloudName(o.Cloud),
		clouds.WithRegion(o.Region),
		clouds.WithEndpointType(o.Interface),
	)
	if err != nil {
		return nil, fmt.Errorf("cannot use cloud %q of clouds.yaml: %w", o.Cloud, err)
	}
	if err := authMethod(cloud.AuthType, &auth); err != nil {
		return nil, fmt.Errorf("cloud %q of clouds.yaml: %w", o.Cloud, err)
	}
	if len(o.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(o.CABundle) {
			return nil, errors.New("the CA bundle holds no PEM certificate")
		}
		tlsCfg.RootCAs = pool
	}
	h := sha256.New()
	for _, part := range [][]byte{doc, []byte(o.Cloud), []byte(o.Region), []byte(o.Interface), o.CABundle} {
		h.Write(part)
		h.Write([]byte{0})
	}
	c := &Credentials{Auth: auth, Endpoint: ep, TLS: tlsCfg}
	copy(c.fingerprint[:], h.Sum(nil))
	return c, nil
}

// FromProviderConfig reads the clouds.yaml document and CA bundle that pc
// names and parses them with ParseCloudsYAML. Errors name the ProviderConfig,
// the Secret and the key at fault.
func FromProviderConfig(ctx context.Context, c client.Reader, pc *v1alpha1.ProviderConfig) (*Credentials, error) {
	return fromConfig(ctx, c, ClusterConfig(pc))
}

// fromConfig is FromProviderConfig for any kind of config.
func fromConfig(ctx context.Context, c client.Reader, cfg Config) (*Credentials, error) {
	cr := cfg.Credentials
	if cr.SecretRef == nil {
		return nil, fmt.Errorf("%s: spec.credentials.secretRef is not set: name the Secret key holding clouds.yaml", cfg.Name)
	}
	doc, err := clients.SecretKey(ctx, c, *cr.SecretRef, "clouds.yaml")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Name, err)
	}
	o := CloudOptions{Cloud: cr.Cloud, Region: cr.Region, Interface: cr.Interface}
	if cr.CABundleSecretRef != nil {
		if o.CABundle, err = clients.SecretKey(ctx, c, *cr.CABundleSecretRef, "CA bundle"); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Name, err)
		}
	}
	creds, err := ParseCloudsYAML(doc, o)
	if err != nil {
		return nil, fmt.Errorf("%s: Secret %s/%s key %q: %w", cfg.Name, cr.SecretRef.Namespace, cr.SecretRef.Name, cr.SecretRef.Key, err)
	}
	return creds, nil
}

// The auth_type values a cloud may have, as the OpenStack client names
// them (keystoneauth's plugin names). Keystone's v2.0 API, which v2password
// and v2token are for, is gone since OpenStack Queens.
const (
	authPassword        = "password"
	authV3Password      = "v3password"
	authToken           = "token"
	authV3Token         = "v3token"
	authV3AppCredential = "v3applicationcredential"
)

// Messages of authMethod: each names the auth_type, the field to add and
// where to find it. gosec's G101 takes their names for credentials.
//
//nolint:gosec // G101: messages that name clouds.yaml's fields, no credentials
const (
	errAuthType = "auth_type %q is not supported: use v3applicationcredential (an application credential), " +
		"v3password or password (a user's password), v3token or token (a token), or leave auth_type out (a password, " +
		"or an application credential when auth.application_credential_secret is given)"
	errAppCredSecret = "auth_type %s needs auth.application_credential_secret: add the secret that " +
		"openstack application credential create printed (it cannot be shown again; create a new credential if it is lost)"
	errAppCredWhich = "auth_type %s needs auth.application_credential_id (or auth.application_credential_name with the user " +
		"who owns it): add application_credential_id, as openstack application credential show <name> -c id prints it"
	errAppCredUser = "auth_type %s with auth.application_credential_name %q needs the user who owns the credential: add " +
		"auth.user_id, or auth.username with auth.user_domain_name (or auth.user_domain_id); or give " +
		"auth.application_credential_id instead of the name"
	errPassword     = "auth_type %s needs auth.password: add the user's password, or use an application credential (auth_type v3applicationcredential)"
	errPasswordUser = "auth_type %s needs the user: add auth.username with auth.user_domain_name (or auth.user_domain_id), or auth.user_id"
	errUserBoth     = "auth_type %s takes one of auth.username and auth.user_id: remove one"
	errUserDomain   = "auth_type %s with auth.username %q needs the user's domain: add auth.user_domain_name (such as Default) or auth.user_domain_id"
	errToken        = "auth_type %s needs auth.token: add a Keystone token"
)

// authMethod checks that a holds what the cloud's auth_type needs and
// clears the fields of the other methods: gophercloud picks the method by
// which fields are set, a password first, so that a leftover password
// would otherwise override auth_type v3applicationcredential. An unknown
// auth_type is refused: gophercloud ignores auth_type, and would send
// whatever fields are set (issue 29: v3bogus was sent as a password and
// answered 401). Without auth_type a cloud is a password one (the
// OpenStack client's default), or an application credential one when it
// has auth.application_credential_secret.
func authMethod(authType string, a *gophercloud.AuthOptions) error {
	method := authType
	if method == "" {
		method = authPassword
		if a.ApplicationCredentialSecret != "" {
			method = authV3AppCredential
		}
	}
	// shown is the auth_type as the messages name it.
	shown := cmp.Or(authType, method+" (auth_type left out)")
	switch method {
	case authV3AppCredential:
		a.Password, a.TokenID = "", ""
		return appCredential(shown, a)
	case authPassword, authV3Password:
		a.TokenID, a.ApplicationCredentialID, a.ApplicationCredentialName, a.ApplicationCredentialSecret = "", "", "", ""
		return password(shown, a)
	case authToken, authV3Token:
		// gophercloud refuses a token beside a user or the user's domain.
		a.Password, a.Username, a.UserID, a.DomainID, a.DomainName = "", "", "", "", ""
		a.ApplicationCredentialID, a.ApplicationCredentialName, a.ApplicationCredentialSecret = "", "", ""
		if a.TokenID == "" {
			return fmt.Errorf(errToken, shown)
		}
		return nil
	}
	return fmt.Errorf(errAuthType, authType)
}

// appCredential checks an application credential's fields: its secret,
// and its ID or its name with the user who owns it (by ID, or by name with
// the user's domain), as Keystone finds a credential. shown is the
// auth_type for the messages.
func appCredential(shown string, a *gophercloud.AuthOptions) error {
	switch {
	case a.ApplicationCredentialSecret == "":
		return fmt.Errorf(errAppCredSecret, shown)
	case a.ApplicationCredentialID != "":
		return nil
	case a.ApplicationCredentialName == "":
		return fmt.Errorf(errAppCredWhich, shown)
	case a.UserID == "" && (a.Username == "" || a.DomainID == "" && a.DomainName == ""):
		return fmt.Errorf(errAppCredUser, shown, a.ApplicationCredentialName)
	}
	return nil
}

// password checks a password cloud's fields: the password and one user, by
// ID or by name with the user's domain. shown is the auth_type for the
// messages.
func password(shown string, a *gophercloud.AuthOptions) error {
	switch {
	case a.Password == "":
		return fmt.Errorf(errPassword, shown)
	case a.Username == "" && a.UserID == "":
		return fmt.Errorf(errPasswordUser, shown)
	case a.Username != "" && a.UserID != "":
		return fmt.Errorf(errUserBoth, shown)
	case a.Username != "" && a.DomainID == "" && a.DomainName == "":
		return fmt.Errorf(errUserDomain, shown, a.Username)
	}
	return nil
}

// cloudNames lists cloud names, quoted and sorted, or "none".
func cloudNames(names iter.Seq[string]) string {
	quoted := slices.Sorted(names)
	if len(quoted) == 0 {
		return "none"
	}
	for i, n := range quoted {
		quoted[i] = strconv.Quote(n)
	}
	return strings.Join(quoted, ", ")
}

var (
	// yamlQuoted matches the values that YAML decoding errors quote, such
	// as "cannot unmarshal !!str `hunter2`", which may be secrets.
	yamlQuoted = regexp.MustCompile("`[^`]*`")
	// yamlGoType matches the Go type that decoding errors name, which
	// means nothing to the author of the document.
	yamlGoType = regexp.MustCompile(" into [^\n]*")
)

// redactYAMLError keeps a YAML error's position and reason and drops any
// value it quotes.
func redactYAMLError(err error) string {
	return yamlGoType.ReplaceAllString(yamlQuoted.ReplaceAllString(err.Error(), "`…`"), "")
}
