package manifests

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const quotaStoreWorkload = "StatefulSet/llmgw-quota-store"

// TestQuotaStore: both installs run one Redis the gateways share their
// counters in, reach it through its Service with the password from the
// generated Secret (a file, never an argument), and the store includes the
// same password from the same Secret.
func TestQuotaStore(t *testing.T) {
	for _, in := range installs(t) {
		t.Run(in.Source, func(t *testing.T) {
			sts := in.get(t, "StatefulSet", "llmgw-quota-store").Obj.(*appsv1.StatefulSet)
			if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
				t.Errorf("quota store replicas %v, want 1 (one primary for atomic scripts)", sts.Spec.Replicas)
			}
			spec := sts.Spec.Template.Spec
			c := spec.Containers[0]
			if !strings.HasPrefix(c.Image, "llmgw-redis:") {
				t.Errorf("quota store image %q, want llmgw-redis:<Debian version>", c.Image)
			}
			if !slices.Equal(c.Args, []string{"/etc/redis/redis.conf"}) {
				t.Errorf("quota store args %v, want only the config file (no password on the command line)", c.Args)
			}
			for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
				if p == nil || p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromString("redis") {
					t.Errorf("probe %+v, want a TCP check of port redis", p)
				}
			}
			if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
				t.Errorf("quota store resources %+v: want requests and limits", c.Resources)
			}
			if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
				t.Errorf("the quota store mounts a service account token it never uses")
			}
			checkSecretVolume(t, spec, "auth", "llmgw-quota-store", "redis.conf")
			if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != "data" {
				t.Errorf("volumeClaimTemplates %v, want one named data (the append-only file)", sts.Spec.VolumeClaimTemplates)
			}

			cm := in.get(t, "ConfigMap", "llmgw-quota-store").Obj.(*corev1.ConfigMap)
			conf := cm.Data["redis.conf"]
			for _, line := range []string{"include /etc/redis/auth/redis.conf", "port 6379", "dir /data", "appendonly yes",
				"maxmemory-policy noeviction"} {
				if !strings.Contains(conf, "\n"+line+"\n") && !strings.HasPrefix(conf, line+"\n") {
					t.Errorf("redis.conf lacks %q:\n%s", line, conf)
				}
			}
			if strings.Contains(conf, "requirepass") {
				t.Errorf("redis.conf in the ConfigMap carries the password")
			}
			svc := in.get(t, "Service", "llmgw-quota-store").Obj.(*corev1.Service)
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 6379 || svc.Spec.ClusterIP == corev1.ClusterIPNone {
				t.Errorf("quota store Service %+v, want a ClusterIP on 6379", svc.Spec)
			}

			gw := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet).Spec.Template.Spec
			args := gw.Containers[0].Args
			for _, want := range []string{"--quota-store=redis://llmgw-quota-store:6379", "--quota-store-password-file=/etc/llmgw/quota-store/password"} {
				if !slices.Contains(args, want) {
					t.Errorf("gateway args %v lack %s", args, want)
				}
			}
			checkSecretVolume(t, gw, "quota-store-password", "llmgw-quota-store", "password")
		})
	}
}

// TestQuotaStoreSecret: the chart generates one password under both keys,
// a fresh one per render without a cluster.
func TestQuotaStoreSecret(t *testing.T) {
	first, second := renderHelm(t), renderHelm(t, "--set", "quotaStore.enabled=true")
	a := first.get(t, "Secret", "llmgw-quota-store").Obj.(*corev1.Secret)
	b := second.get(t, "Secret", "llmgw-quota-store").Obj.(*corev1.Secret)
	if keys := slicesSortedKeys(a.Data); !slices.Equal(keys, []string{"password", "redis.conf"}) || len(a.StringData) != 0 {
		t.Fatalf("Secret llmgw-quota-store keys %v, want password and redis.conf", keys)
	}
	pw := a.Data["password"]
	if len(pw) < 32 {
		t.Errorf("password of %d bytes, want at least 32", len(pw))
	}
	if want := "requirepass " + string(pw) + "\n"; string(a.Data["redis.conf"]) != want {
		t.Errorf("redis.conf is not the requirepass line of the same password")
	}
	if bytes.Equal(pw, b.Data["password"]) {
		t.Errorf("the same password in two renders: not generated")
	}
}

func TestQuotaStoreHelmValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want bool
	}{
		{"on by default with 2 replicas", nil, true},
		{"off by default with 1 replica", []string{"gateway.replicas=1"}, false},
		{"forced on with 1 replica", []string{"gateway.replicas=1", "quotaStore.enabled=true"}, true},
		{"forced off with 3 replicas", []string{"gateway.replicas=3", "quotaStore.enabled=false"}, false},
		{"on with the autoscaler up to 6, replicas 1", []string{"gateway.replicas=1", "gateway.autoscaling.enabled=true"}, true},
		{"off with the autoscaler held at 1, replicas 3", []string{"gateway.replicas=3", "gateway.autoscaling.enabled=true",
			"gateway.autoscaling.minReplicas=1", "gateway.autoscaling.maxReplicas=1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			in := renderHelm(t, args...)
			_, has := in.Objects["StatefulSet/llmgw-quota-store"]
			gw := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet).Spec.Template.Spec
			flag := slices.ContainsFunc(gw.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--quota-store") })
			if has != tc.want || flag != tc.want {
				t.Errorf("quota store installed %v, gateway flags %v; want %v", has, flag, tc.want)
			}
		})
	}
	in := renderHelm(t, "--set", "quotaStore.failClosed=true", "--set", "quotaStore.timeout=2s", "--set", "quotaStore.persistence.enabled=false")
	args := in.get(t, "StatefulSet", "llmgw-gateway").Obj.(*appsv1.StatefulSet).Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--quota-store-fail-closed", "--quota-store-timeout=2s"} {
		if !slices.Contains(args, want) {
			t.Errorf("gateway args %v lack %s", args, want)
		}
	}
	sts := in.get(t, "StatefulSet", "llmgw-quota-store").Obj.(*appsv1.StatefulSet)
	if len(sts.Spec.VolumeClaimTemplates) != 0 {
		t.Errorf("persistence off, but a volumeClaimTemplate")
	}
	if conf := in.get(t, "ConfigMap", "llmgw-quota-store").Obj.(*corev1.ConfigMap).Data["redis.conf"]; !strings.Contains(conf, "appendonly no") {
		t.Errorf("persistence off, but redis.conf says:\n%s", conf)
	}
	if _, err := helm("template", "llmgw", "charts/llmgw", "--set", "quotaStore.image.tag=latest"); err == nil ||
		!strings.Contains(err.Error(), "not latest") {
		t.Errorf("quotaStore.image.tag=latest: %v, want a refusal", err)
	}
}

func slicesSortedKeys(m map[string][]byte) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
