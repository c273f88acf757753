package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestRenderPTPHostLocal(t *testing.T) {
	out, err := render("10.244.0.0/16", 0)
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Plugins []struct {
			Type   string `json:"type"`
			IPMasq bool   `json:"ipMasq"`
			IPAM   struct {
				Type   string                `json:"type"`
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(out, &conf); err != nil {
		t.Fatal(err)
	}
	if len(conf.Plugins) != 2 || conf.Plugins[0].Type != "ptp" || conf.Plugins[1].Type != "portmap" {
		t.Fatalf("plugins: %s", out)
	}
	p := conf.Plugins[0]
	if !p.IPMasq || p.IPAM.Type != "host-local" || p.IPAM.Ranges[0][0]["subnet"] != "10.244.0.0/16" {
		t.Fatalf("ptp: %s", out)
	}
}

func TestRenderRejectsBadSubnet(t *testing.T) {
	if _, err := render("not-a-cidr", 0); err == nil {
		t.Fatal("want an error")
	}
}

func TestWriteAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "net.d", "10-kindnet.conflist")
	if err := writeAtomic(path, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "{}\n" {
		t.Fatalf("got %q, %v", b, err)
	}
}
