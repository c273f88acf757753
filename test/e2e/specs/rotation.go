package specs

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // ginkgo DSL
	. "github.com/onsi/gomega"    //nolint:revive // gomega DSL
)

// RotationTarget is one deployed system as the key-rotation spec drives
// it: where to send requests, and how its users make and rotate keys there
// (kubectl and `llmgw keys` on kind, the API on envtest).
type RotationTarget struct {
	Gateway string
	// Replicas are the gateway replicas' base URLs: each must serve the
	// new key before the old one is tried again.
	Replicas []string
	Alias    string
	Marker   string
	// KeyID is the id of the key the spec creates and rotates.
	KeyID string
	// CreateKey makes key id, allowed Alias, and returns its plaintext.
	CreateKey func(ctx context.Context, id string) string
	// RotateKey rotates key id with a grace window, as users do
	// (`llmgw keys rotate`), and returns the new key's plaintext.
	RotateKey func(ctx context.Context, id string, grace time.Duration) string
	// RotationShown reports what the cluster shows of the key's rotation:
	// whether it is in its grace window, and the events recorded for it.
	RotationShown func(ctx context.Context, id string) (inGrace bool, events []string)
}

// rotationGrace is long enough for the new key to be hot-loaded and both
// keys to be tried on a slow machine, short enough to wait out.
const rotationGrace = 20 * time.Second

// Rotation is the spec of a key's rotation: during the grace window the
// previous and the new key are both served as the same key (one history,
// one set of limits; each record has the fingerprint of the key used);
// after it the previous key is refused with 401 key_rotated while the new
// one goes on.
func Rotation(target func() *RotationTarget) {
	It("serves the previous and the new key as one key during the grace window, and refuses the previous one with key_rotated after it", func(ctx SpecContext) {
		t := target()
		id := t.KeyID
		old := t.CreateKey(ctx, id)
		Eventually(func() int { return Status(ctx, t.Gateway, old, t.Alias, t.Marker+" before") }).
			WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Equal(http.StatusOK), "the new key is never served")
		before, err := RawChat(ctx, t.Gateway, old, t.Alias, t.Marker+" before rotation", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(before.Status).To(Equal(http.StatusOK), "%s", before)

		By("rotating the key")
		rotated := time.Now()
		fresh := t.RotateKey(ctx, id, rotationGrace)
		for _, base := range append([]string{t.Gateway}, t.Replicas...) {
			Eventually(func() int { return ModelsStatus(ctx, base, fresh) }).
				WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(Equal(http.StatusOK), "the rotated key is never served by %s", base)
		}
		viaOld, err := RawChat(ctx, t.Gateway, old, t.Alias, t.Marker+" previous key in grace", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(time.Since(rotated)).To(BeNumerically("<", rotationGrace), "the machine is too slow to try the previous key within its grace")
		Expect(viaOld.Status).To(Equal(http.StatusOK), "the previous key in its grace window: %s", viaOld)
		viaNew, err := RawChat(ctx, t.Gateway, fresh, t.Alias, t.Marker+" new key", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(viaNew.Status).To(Equal(http.StatusOK), "%s", viaNew)

		By("reading one history with either key")
		for _, key := range []string{old, fresh} {
			list, err := ListUsage(ctx, t.Gateway, key)
			Expect(err).NotTo(HaveOccurred())
			recs := list.ByID()
			for _, r := range []Raw{before, viaOld, viaNew} {
				Expect(recs).To(HaveKey(r.RequestID()), "GET /v1/usage lacks request %s", r.RequestID())
				Expect(recs[r.RequestID()].KeyID).To(Equal(id))
			}
			Expect(recs[viaOld.RequestID()].KeyFingerprint).To(Equal(recs[before.RequestID()].KeyFingerprint))
			Expect(recs[viaNew.RequestID()].KeyFingerprint).NotTo(Equal(recs[viaOld.RequestID()].KeyFingerprint),
				"the records of the two keys have the same fingerprint")
		}
		if t.RotationShown != nil {
			inGrace, events := t.RotationShown(ctx, id)
			Expect(inGrace).To(BeTrue(), "status does not show the grace window")
			Expect(events).To(ContainElement("KeyRotated"))
		}

		By("waiting out the grace window")
		Eventually(func() string {
			r, err := RawChat(ctx, t.Gateway, old, t.Alias, t.Marker+" previous key after grace", false)
			if err != nil {
				return err.Error()
			}
			return r.Err.Code
		}).WithTimeout(rotationGrace + 30*time.Second).WithPolling(time.Second).Should(Equal("key_rotated"))
		Expect(Status(ctx, t.Gateway, fresh, t.Alias, t.Marker+" new key after grace")).To(Equal(http.StatusOK))
		if t.RotationShown != nil {
			Eventually(func() []string {
				inGrace, events := t.RotationShown(ctx, id)
				if inGrace {
					return nil
				}
				return events
			}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(ContainElement("RotationGraceEnded"))
		}
	})
}
