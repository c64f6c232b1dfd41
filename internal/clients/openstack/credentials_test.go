package openstack

import (
	"context"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
)

// secretPassword is in the fixtures only to prove it never reaches an error.
const secretPassword = "s3cr3t-hunter2"

const cloudsPassword = `
clouds:
  lab:
    auth:
      auth_url: http://127.0.0.1:5000/v3
      username: admin
      password: ` + secretPassword + `
      project_name: tenant-a
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    interface: internal
  other:
    auth:
      auth_url: http://127.0.0.1:5000/v3
`

const cloudsAppCred = `
clouds:
  lab:
    auth_type: v3applicationcredential
    auth:
      auth_url: https://keystone.example.test:5000/v3
      application_credential_id: 0123abcd
      application_credential_secret: ` + secretPassword + `
`

// cloudsLab is a clouds.yaml with one cloud "lab" of authType (none when
// empty) whose auth section has auth_url and the lines of auth, each
// "key: value".
func cloudsLab(authType string, auth ...string) string {
	doc := "clouds:\n  lab:\n"
	if authType != "" {
		doc += "    auth_type: " + authType + "\n"
	}
	doc += "    auth:\n      auth_url: https://keystone.example.test:5000/v3\n"
	for _, l := range auth {
		doc += "      " + l + "\n"
	}
	return doc
}

func pc(mod func(*v1alpha1.ProviderConfig)) *v1alpha1.ProviderConfig {
	p := &v1alpha1.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.OpenStackCredentials{
			Source:    xpv2.CredentialsSourceSecret,
			SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "openstack"}, Key: "clouds.yaml"},
			Cloud:     "lab",
		}},
	}
	if mod != nil {
		mod(p)
	}
	return p
}

// secrets serves Secrets by name from a map; an absent name is NotFound.
func secrets(data map[string]map[string]string) client.Reader {
	return &test.MockClient{MockGet: func(_ context.Context, key client.ObjectKey, obj client.Object) error {
		d, ok := data[key.Name]
		if !ok {
			return kerrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
		}
		s := obj.(*corev1.Secret)
		s.Data = map[string][]byte{}
		for k, v := range d {
			s.Data[k] = []byte(v)
		}
		return nil
	}}
}

func TestFromProviderConfig(t *testing.T) {
	type want struct {
		auth     gophercloud.AuthOptions
		endpoint gophercloud.EndpointOpts
		// err is the error's text, "" for none.
		err string
		// absent: the error unwraps to the API server's NotFound (an
		// object not yet applied, which the controllers retry soon).
		absent bool
	}
	cases := map[string]struct {
		reason  string
		secrets map[string]map[string]string
		pc      *v1alpha1.ProviderConfig
		want    want
	}{
		"PasswordAuth": {
			reason:  "A password cloud yields its user, project scope, region and interface.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsPassword}},
			pc:      pc(nil),
			want: want{
				auth: gophercloud.AuthOptions{
					IdentityEndpoint: "http://127.0.0.1:5000/v3", Username: "admin", Password: secretPassword,
					DomainName: "Default", TenantName: "tenant-a",
					Scope: &gophercloud.AuthScope{ProjectName: "tenant-a", DomainName: "Default"},
				},
				endpoint: gophercloud.EndpointOpts{Region: "RegionOne", Availability: gophercloud.AvailabilityInternal},
			},
		},
		"ApplicationCredential": {
			reason:  "An application-credential cloud yields the credential's ID and secret.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsAppCred}},
			pc:      pc(nil),
			want: want{
				auth: gophercloud.AuthOptions{
					IdentityEndpoint:            "https://keystone.example.test:5000/v3",
					ApplicationCredentialID:     "0123abcd",
					ApplicationCredentialSecret: secretPassword,
				},
				endpoint: gophercloud.EndpointOpts{Availability: gophercloud.AvailabilityPublic},
			},
		},
		"ApplicationCredentialByName": {
			reason: "An application credential by name with the user's ID yields the name, user and secret.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("v3applicationcredential",
				"application_credential_name: vpn", "user_id: u-1", "application_credential_secret: "+secretPassword)}},
			pc: pc(nil),
			want: want{
				auth: gophercloud.AuthOptions{
					IdentityEndpoint: "https://keystone.example.test:5000/v3", UserID: "u-1",
					ApplicationCredentialName: "vpn", ApplicationCredentialSecret: secretPassword,
				},
				endpoint: gophercloud.EndpointOpts{Availability: gophercloud.AvailabilityPublic},
			},
		},
		"ApplicationCredentialWithoutAuthType": {
			reason: "Without auth_type, an application credential's secret makes the cloud an application credential one.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("",
				"application_credential_id: 0123abcd", "application_credential_secret: "+secretPassword)}},
			pc: pc(nil),
			want: want{
				auth: gophercloud.AuthOptions{
					IdentityEndpoint:        "https://keystone.example.test:5000/v3",
					ApplicationCredentialID: "0123abcd", ApplicationCredentialSecret: secretPassword,
				},
				endpoint: gophercloud.EndpointOpts{Availability: gophercloud.AvailabilityPublic},
			},
		},
		"ApplicationCredentialLeftoverPassword": {
			reason: "auth_type decides: a password left beside an application credential is not sent (gophercloud would send it first).",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("v3applicationcredential",
				"application_credential_id: 0123abcd", "application_credential_secret: "+secretPassword, "password: old")}},
			pc: pc(nil),
			want: want{
				auth: gophercloud.AuthOptions{
					IdentityEndpoint:        "https://keystone.example.test:5000/v3",
					ApplicationCredentialID: "0123abcd", ApplicationCredentialSecret: secretPassword,
				},
				endpoint: gophercloud.EndpointOpts{Availability: gophercloud.AvailabilityPublic},
			},
		},
		"Token": {
			reason:  "A token cloud yields the token and its scope, no user.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("v3token", "token: "+secretPassword, "project_id: p-1")}},
			pc:      pc(nil),
			want: want{
				auth: gophercloud.AuthOptions{
					IdentityEndpoint: "https://keystone.example.test:5000/v3", TokenID: secretPassword, TenantID: "p-1",
					Scope: &gophercloud.AuthScope{ProjectID: "p-1"},
				},
				endpoint: gophercloud.EndpointOpts{Availability: gophercloud.AvailabilityPublic},
			},
		},
		"Overrides": {
			reason:  "spec.credentials.region and interface override the cloud's own.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsPassword}},
			pc: pc(func(p *v1alpha1.ProviderConfig) {
				p.Spec.Credentials.Region = "RegionTwo"
				p.Spec.Credentials.Interface = "admin"
			}),
			want: want{
				auth: gophercloud.AuthOptions{
					IdentityEndpoint: "http://127.0.0.1:5000/v3", Username: "admin", Password: secretPassword,
					DomainName: "Default", TenantName: "tenant-a",
					Scope: &gophercloud.AuthScope{ProjectName: "tenant-a", DomainName: "Default"},
				},
				endpoint: gophercloud.EndpointOpts{Region: "RegionTwo", Availability: gophercloud.AvailabilityAdmin},
			},
		},
		"SecretMissing": {
			reason: "A missing Secret is named with its namespace.",
			pc:     pc(nil),
			want:   want{err: "ProviderConfig default: Secret crossplane-system/openstack with the clouds.yaml does not exist: create it or fix the secretRef", absent: true},
		},
		"KeyMissing": {
			reason:  "A Secret without the key names the key and the keys it does have.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yml": cloudsPassword, "ca.crt": "x"}},
			pc:      pc(nil),
			want:    want{err: `ProviderConfig default: Secret crossplane-system/openstack has no key "clouds.yaml" holding the clouds.yaml (keys present: ca.crt, clouds.yml): add the key or fix secretRef.key`},
		},
		"KeyEmpty": {
			reason:  "A Secret whose clouds.yaml key is there but empty says so, not that the key is missing (issue 29).",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": ""}},
			pc:      pc(nil),
			want:    want{err: `ProviderConfig default: Secret crossplane-system/openstack has the key "clouds.yaml" for the clouds.yaml, but its value is empty: write the clouds.yaml into it or fix secretRef.key`},
		},
		"Malformed": {
			reason:  "Malformed YAML names the Secret and key and says where the document breaks.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": "clouds:\n  lab:\n    auth: [\n"}},
			pc:      pc(nil),
			want:    want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": clouds.yaml is not valid YAML: yaml: line 3: did not find expected node content`},
		},
		"MalformedValueNotEchoed": {
			reason:  "A type error in the document does not echo the offending value, which may be a secret.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": "clouds: " + secretPassword + "\n"}},
			pc:      pc(nil),
			want:    want{err: "ProviderConfig default: Secret crossplane-system/openstack key \"clouds.yaml\": clouds.yaml is not valid YAML: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!str `…`"},
		},
		"CloudAbsent": {
			reason:  "A cloud name that is not in the document is named, with the clouds that are.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsPassword}},
			pc:      pc(func(p *v1alpha1.ProviderConfig) { p.Spec.Credentials.Cloud = "prod" }),
			want:    want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": clouds.yaml has no cloud "prod" under clouds: (clouds present: "lab", "other")`},
		},
		"NoAuthURL": {
			reason:  "A cloud without auth_url cannot reach Keystone and says so.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": "clouds:\n  lab:\n    region_name: RegionOne\n"}},
			pc:      pc(nil),
			want:    want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml has no auth.auth_url`},
		},
		"ApplicationCredentialWithoutID": {
			reason: "An application credential without its ID (or name) names the field to add, not gophercloud's 'You must provide a password to authenticate' (issue 29).",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("v3applicationcredential",
				"application_credential_secret: "+secretPassword)}},
			pc: pc(nil),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type v3applicationcredential needs auth.application_credential_id (or auth.application_credential_name with the user ` +
				`who owns it): add application_credential_id, as openstack application credential show <name> -c id prints it`},
		},
		"ApplicationCredentialByNameWithoutUser": {
			reason: "An application credential by name without a user says to add the user and its domain, not gophercloud's 'Exactly one of Username and UserID must be provided for password authentication' (issue 29).",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("v3applicationcredential",
				"application_credential_name: vpn", "application_credential_secret: "+secretPassword)}},
			pc: pc(nil),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type v3applicationcredential with auth.application_credential_name "vpn" needs the user who owns the credential: add ` +
				`auth.user_id, or auth.username with auth.user_domain_name (or auth.user_domain_id); or give auth.application_credential_id instead of the name`},
		},
		"ApplicationCredentialByNameWithoutDomain": {
			reason: "A user name without its domain cannot find the credential's owner either.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("v3applicationcredential",
				"application_credential_name: vpn", "username: tenant-a-user", "application_credential_secret: "+secretPassword)}},
			pc: pc(nil),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type v3applicationcredential with auth.application_credential_name "vpn" needs the user who owns the credential: add ` +
				`auth.user_id, or auth.username with auth.user_domain_name (or auth.user_domain_id); or give auth.application_credential_id instead of the name`},
		},
		"ApplicationCredentialWithoutSecret": {
			reason:  "An application credential without its secret names the field.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("v3applicationcredential", "application_credential_id: 0123abcd")}},
			pc:      pc(nil),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type v3applicationcredential needs auth.application_credential_secret: add the secret that openstack application ` +
				`credential create printed (it cannot be shown again; create a new credential if it is lost)`},
		},
		"UnknownAuthType": {
			reason:  "An auth_type the provider does not know is refused, naming it and the accepted ones, not sent as a password (issue 29: v3bogus, then Keystone's 401).",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("v3bogus", "username: admin", "password: "+secretPassword, "user_domain_name: Default")}},
			pc:      pc(nil),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type "v3bogus" is not supported: use v3applicationcredential (an application credential), v3password or password ` +
				`(a user's password), v3token or token (a token), or leave auth_type out (a password, or an application credential ` +
				`when auth.application_credential_secret is given)`},
		},
		"PasswordMissing": {
			reason:  "A password cloud without the password names the field, with the other way in.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("", "username: admin", "user_domain_name: Default")}},
			pc:      pc(nil),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type password (auth_type left out) needs auth.password: add the user's password, or use an application credential (auth_type v3applicationcredential)`},
		},
		"PasswordWithoutUser": {
			reason:  "A password without a user names the fields to add.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("password", "password: "+secretPassword)}},
			pc:      pc(nil),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type password needs the user: add auth.username with auth.user_domain_name (or auth.user_domain_id), or auth.user_id`},
		},
		"PasswordUserTwice": {
			reason:  "A user given by name and by ID is refused, saying to remove one.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("v3password", "username: admin", "user_id: u-1", "user_domain_name: Default", "password: "+secretPassword)}},
			pc:      pc(nil),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type v3password takes one of auth.username and auth.user_id: remove one`},
		},
		"PasswordWithoutDomain": {
			reason:  "A user name without its domain names the domain fields.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("password", "username: admin", "password: "+secretPassword)}},
			pc:      pc(nil),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type password with auth.username "admin" needs the user's domain: add auth.user_domain_name (such as Default) or auth.user_domain_id`},
		},
		"TokenMissing": {
			reason:  "A token cloud without the token names the field.",
			secrets: map[string]map[string]string{"openstack": {"clouds.yaml": cloudsLab("token", "project_id: p-1")}},
			pc:      pc(nil),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type token needs auth.token: add a Keystone token`},
		},
		"NoSecretRef": {
			reason: "source Secret without secretRef (possible only if admission was bypassed) is an error, not a panic.",
			pc:     pc(func(p *v1alpha1.ProviderConfig) { p.Spec.Credentials.SecretRef = nil }),
			want:   want{err: "ProviderConfig default: spec.credentials.secretRef is not set: name the Secret key holding clouds.yaml"},
		},
		"BadCABundle": {
			reason: "A CA bundle without a PEM certificate is refused.",
			secrets: map[string]map[string]string{
				"openstack": {"clouds.yaml": cloudsPassword},
				"ca":        {"ca.crt": "not a certificate"},
			},
			pc: pc(func(p *v1alpha1.ProviderConfig) {
				p.Spec.Credentials.CABundleSecretRef = &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "ca"}, Key: "ca.crt"}
			}),
			want: want{err: `ProviderConfig default: Secret crossplane-system/openstack key "clouds.yaml": the CA bundle holds no PEM certificate`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := FromProviderConfig(context.Background(), secrets(tc.secrets), tc.pc)
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Fatalf("%s\nFromProviderConfig(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if got := kerrors.IsNotFound(err); got != tc.want.absent {
				t.Errorf("%s\nkerrors.IsNotFound(FromProviderConfig(...)'s error) = %t, want %t", tc.reason, got, tc.want.absent)
			}
			if err != nil {
				if strings.Contains(err.Error(), secretPassword) {
					t.Errorf("%s\nerror leaks a secret: %v", tc.reason, err)
				}
				return
			}
			if diff := cmp.Diff(tc.want.auth, got.Auth, cmpopts.IgnoreUnexported(gophercloud.AuthOptions{})); diff != "" {
				t.Errorf("%s\nFromProviderConfig(...).Auth: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.endpoint, got.Endpoint); diff != "" {
				t.Errorf("%s\nFromProviderConfig(...).Endpoint: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// errText returns err's text, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
