package controllers

import "github.com/llmgw/llmgw/api/snapshot"

// What a key claims: its prefix and hash and, while it has a previous key
// (spec.previous), that key's prefix and hash too. The gateways find a key
// by either prefix, and the snapshot refuses two keys that share one, so a
// previous key's prefix and hash are claimed like the key's own: the
// older key keeps them, and a newer one that names them is not accepted
// (KeyConflict). Prefixes and hashes are claimed in one space each: a
// key's prefix conflicts with another key's previous prefix as with its
// prefix.

// keyTokens are the tokens of one key, without a slice for each of 50,000.
type keyTokens struct {
	t [4]token
	n int
}

// tokenFields name the spec field each of keyTokens comes from, in order.
var tokenFields = [4]string{"keyPrefix", "keyHash", "previous.keyPrefix", "previous.keyHash"}

func tokensOf(k *snapshot.Key) keyTokens {
	ts := keyTokens{t: [4]token{{false, k.Prefix}, {true, k.Hash}}, n: 2}
	if p := k.Previous; p != nil {
		ts.t[2], ts.t[3], ts.n = token{false, p.Prefix}, token{true, p.Hash}, 4
	}
	return ts
}

// owners is the claims map of t's kind.
func owners(prefixOwner, hashOwner map[string]string, t token) map[string]string {
	if t.hash {
		return hashOwner
	}
	return prefixOwner
}

// claimedBefore names the first of k's tokens another key claimed, and
// that key ("" when none).
func claimedBefore(prefixOwner, hashOwner map[string]string, k *snapshot.Key) (field, owner string) {
	ts := tokensOf(k)
	for i, t := range ts.t[:ts.n] {
		if o, taken := owners(prefixOwner, hashOwner, t)[t.value]; taken {
			return tokenFields[i], o
		}
	}
	return "", ""
}

// claim gives every token of k to k.
func claim(prefixOwner, hashOwner map[string]string, k *snapshot.Key) {
	ts := tokensOf(k)
	for _, t := range ts.t[:ts.n] {
		owners(prefixOwner, hashOwner, t)[t.value] = k.ID
	}
}

// ownsAll says whether the key named name holds every token of k.
func ownsAll(prefixOwner, hashOwner map[string]string, k *snapshot.Key, name string) bool {
	ts := tokensOf(k)
	for _, t := range ts.t[:ts.n] {
		if owners(prefixOwner, hashOwner, t)[t.value] != name {
			return false
		}
	}
	return true
}

// unclaim takes every token of k back.
func unclaim(prefixOwner, hashOwner map[string]string, k *snapshot.Key) {
	ts := tokensOf(k)
	for _, t := range ts.t[:ts.n] {
		delete(owners(prefixOwner, hashOwner, t), t.value)
	}
}
