package render

import (
	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// libipsecConf is the strongswan.conf fragment of data plane Libipsec: the
// plugins of the gateway image's strongswan.conf
// (cluster/images/gateway/strongswan.conf) with kernel-libipsec loaded
// before kernel-netlink, so that it registers the IPsec backend
// (https://docs.strongswan.org/docs/5.9/plugins/kernel-libipsec.html). With
// it, the gateway's local address must lie inside its local traffic
// selectors for its own traffic to enter the tunnel.
const libipsecConf = `# Data plane Libipsec: ESP in userspace (kernel-libipsec, UDP 4500 over a
# TUN device) instead of the kernel's XFRM. Overrides the plugin list of
# the image's strongswan.conf, which includes this file last.
charon {
  load = random nonce openssl pem pkcs1 x509 pubkey revocation constraints kdf hmac sha1 sha2 md5 aes gcm gmp xcbc kernel-libipsec kernel-netlink socket-default vici
}
`

// dataPlaneConf returns the strongswan.conf fragment of data plane dp, nil
// when the image's strongswan.conf serves it as it is (KernelXFRM, the
// default).
func dataPlaneConf(dp v1alpha1.DataPlane) []byte {
	if dp == v1alpha1.DataPlaneLibipsec {
		return []byte(libipsecConf)
	}
	return nil
}
