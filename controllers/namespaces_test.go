package controllers

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWatchedNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name   string
		home   string
		others []string
		want   []string
		err    string
	}{
		{name: "home only", home: "llmgw-system", want: []string{"llmgw-system"}},
		{name: "sorted, each once, home first", home: "llmgw-system", others: []string{"team-b", " team-a", "llmgw-system", "team-b", ""}, want: []string{"llmgw-system", "team-a", "team-b"}},
		{name: "a typo is refused, not left unwatched", home: "llmgw-system", others: []string{"Team_A", "team-b"}, err: `"Team_A"`},
		{name: "home required", home: " ", others: []string{"team-a"}, err: "own namespace is required"},
		{name: "invalid home", home: "LLMGW", err: `"LLMGW"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WatchedNamespaces(tc.home, tc.others)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, %v; want an error naming %s", got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestObjectID(t *testing.T) {
	for _, tc := range []struct{ ns, name, want string }{
		{"llmgw-system", "ci", "ci"},
		{"", "ci", "ci"},
		{"team-a", "ci", "team-a/ci"},
	} {
		obj := &metav1.ObjectMeta{Namespace: tc.ns, Name: tc.name}
		if got := objectID("llmgw-system", obj); got != tc.want {
			t.Errorf("objectID(%s/%s) = %q, want %q", tc.ns, tc.name, got, tc.want)
		}
	}
	if got := qualify("llmgw-system", "team-a", ""); got != "" {
		t.Errorf("no reference stays no reference, got %q", got)
	}
}
