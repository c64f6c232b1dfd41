// Package vicitest builds VICI messages for the agent's unit tests.
package vicitest

import "github.com/strongswan/govici/vici"

// Msg builds a VICI message from alternating keys and values (string,
// []string or *vici.Message). It panics on a value vici cannot carry.
func Msg(kv ...any) *vici.Message {
	m := vici.NewMessage()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := m.Set(kv[i].(string), kv[i+1]); err != nil {
			panic(err)
		}
	}
	return m
}
