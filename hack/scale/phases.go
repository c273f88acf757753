package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/llmgw/llmgw/api/v1alpha1"
)

// bulk creates the aliases, then the keys.
func bulk(ctx context.Context, k *kube, c config, rep *report) error {
	h, _, err := k.head(ctx)
	if err != nil {
		return err
	}
	if h != nil {
		rep.BaselineKeys = headKeys(h)
	}
	logf("bulk: %d ModelAliases, then %d GatewayKeys, at %.0f/s (the snapshot has %d keys now)", c.aliases, c.keys, c.qps, rep.BaselineKeys)
	start := time.Now()
	err = k.createAll(ctx, "ModelAliases", c.aliases, func(i int) (client.Object, error) {
		return &v1alpha1.ModelAlias{
			ObjectMeta: metav1.ObjectMeta{Name: aliasName(i), Namespace: c.namespace, Labels: k.labels()},
			Spec:       v1alpha1.ModelAliasSpec{Primary: v1alpha1.Route{Provider: c.provider, Model: fmt.Sprintf("%s-%d", c.model, i%7)}},
		}, nil
	})
	if err != nil {
		return err
	}
	err = k.createAll(ctx, "GatewayKeys", c.keys, func(i int) (client.Object, error) {
		// A quarter may use every alias, the others one to three of them.
		models := []string{"*"}
		if n := i % 4; n > 0 && c.aliases > 0 {
			models = nil
			for j := range n {
				models = append(models, aliasName((i+7*j)%c.aliases))
			}
			slices.Sort(models)
			models = slices.Compact(models)
		}
		_, gk, err := k.newKey(keyName(i), models)
		return gk, err
	})
	rep.BulkCreate = seconds(time.Since(start))
	return err
}

// converge waits until the head holds every key and every gateway runs it.
func converge(ctx context.Context, k *kube, c config, gws *gateways, rep *report) error {
	want := rep.BaselineKeys + c.keys
	start := time.Now()
	deadline := start.Add(c.converge)
	logf("converge: waiting for a snapshot with %d keys on every gateway", want)
	for {
		h, _, err := k.head(ctx)
		if err != nil {
			return err
		}
		if h != nil && headKeys(h) >= want {
			running := 0
			for _, gw := range gws.list {
				if v, _ := gatewayVersion(ctx, gws, gw); v == h.Version {
					running++
				}
			}
			if running == len(gws.list) {
				rep.Converged = seconds(time.Since(start))
				rep.Snapshot = describeHead(h)
				logf("converge: %d keys in %d key shards, %d bytes compressed, on every gateway after %s",
					headKeys(h), len(h.Keys), rep.Snapshot.CompressedBytes, time.Since(start).Round(time.Second))
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("converge: not done after %s", c.converge)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	rep.StatusesAtConvergence = k.statusProgress(ctx)
	logf("converge: %d of %d GatewayKeys of the run have a status so far", rep.StatusesAtConvergence.WithStatus, rep.StatusesAtConvergence.Listed)
	if c.statusTimeout <= 0 {
		return nil
	}
	// The samples measure the steady state: wait until the controller has
	// written every status (its backlog drained).
	for sc := rep.StatusesAtConvergence; sc.WithStatus < sc.Listed; sc = k.statusProgress(ctx) {
		if time.Since(start) > c.statusTimeout {
			logf("converge: %d of %d statuses after %s; sampling anyway", sc.WithStatus, sc.Listed, c.statusTimeout)
			return nil
		}
		logf("converge: %d of %d GatewayKeys have a status", sc.WithStatus, sc.Listed)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
		}
	}
	rep.StatusesDone = seconds(time.Since(start))
	logf("converge: every status written %s after the bulk", time.Since(start).Round(time.Second))
	return nil
}

func gatewayVersion(ctx context.Context, gws *gateways, gw *gateway) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, gw.mgmt+"/health", nil)
	if err != nil {
		return "", err
	}
	resp, err := gws.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var h struct {
		Snapshot struct {
			Version string `json:"version"`
		} `json:"snapshot"`
	}
	err = json.NewDecoder(resp.Body).Decode(&h)
	return h.Snapshot.Version, err
}

// statusProgress counts the run's keys whose status the controller wrote
// (observedGeneration set), paging through the list.
func (k *kube) statusProgress(ctx context.Context) statusCount {
	var sc statusCount
	sc.At = time.Now()
	opts := []client.ListOption{client.InNamespace(k.c.namespace), client.MatchingLabels(k.labels()), client.Limit(5000)}
	for cont := ""; ; {
		var l v1alpha1.GatewayKeyList
		if err := k.cl.List(ctx, &l, append(opts, client.Continue(cont))...); err != nil {
			sc.Err = err.Error()
			return sc
		}
		for i := range l.Items {
			sc.Listed++
			if l.Items[i].Status.ObservedGeneration > 0 {
				sc.WithStatus++
			}
		}
		if cont = l.Continue; cont == "" {
			return sc
		}
	}
}

// sample times single-key applies, one after the other.
func sample(ctx context.Context, k *kube, c config, gws *gateways, rep *report) error {
	w, err := k.watchBytes(ctx)
	if err != nil {
		return err
	}
	defer w.stop()
	logf("samples: %d single-key applies, each timed until every gateway (%d) serves it", c.samples, len(gws.list))
	id := strconv.FormatInt(time.Now().Unix()%(36*36*36*36), 36) // new names for every invocation
	for i := range c.samples {
		name := fmt.Sprintf("scale-sample-%s-%03d", id, i)
		plaintext, gk, err := k.newKey(name, []string{"*"})
		if err != nil {
			return err
		}
		before, _, err := k.head(ctx)
		if err != nil {
			return err
		}
		bytesBefore := w.bytes()
		start := time.Now()
		if err := k.cl.Create(ctx, gk); err != nil {
			return fmt.Errorf("creating %s: %w", name, err)
		}
		created := time.Since(start)
		per, err := gws.servedBy(ctx, plaintext, start, c.poll, c.servedTimeout)
		if err != nil {
			return fmt.Errorf("sample %d: %w", i, err)
		}
		// The garbage collection of replaced parts follows the head write.
		time.Sleep(c.pause / 2)
		after, _, err := k.head(ctx)
		if err != nil {
			return err
		}
		s := sampleResult{Key: name, CreateCall: millis(created), PerGateway: make([]float64, len(per)),
			WatchBytes: w.bytes() - bytesBefore, NewParts: newParts(before, after)}
		for j, d := range per {
			s.PerGateway[j] = millis(d)
			s.Served = max(s.Served, millis(d))
		}
		rep.Samples = append(rep.Samples, s)
		logf("  %s served by every gateway after %.0f ms (create call %.0f ms), watch bytes %d, new parts %d",
			name, s.Served, s.CreateCall, s.WatchBytes, s.NewParts)
		time.Sleep(c.pause / 2)
	}
	rep.Reloads = k.gatewayReloads(ctx, gws, rep.Started)
	rep.Publishes = k.controllerPublishes(ctx, rep.Started)
	rep.StatusesAtEnd = k.statusProgress(ctx)
	return nil
}

func seconds(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
