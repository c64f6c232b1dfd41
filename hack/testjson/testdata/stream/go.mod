module github.com/ipsecgw/provider-ipsec

go 1.26
