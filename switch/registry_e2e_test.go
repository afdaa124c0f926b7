package swtch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flare-net/flare/hostlib"
	swtch "github.com/flare-net/flare/switch"
	"github.com/flare-net/flare/wire"
)

// TestAdmissionRegisteredE2E runs a registered switch on loopback with
// hostlib sessions over real UDP: a job nobody registered is refused by
// name, so is one registered for other sources; once registered for
// loopback the job runs and its sum is exact; DELETE ends it and its hosts
// hear why.
func TestAdmissionRegisteredE2E(t *testing.T) {
	secretPath := filepath.Join(t.TempDir(), "admin-secret")
	secret := []byte("e2e-secret-0123456789abcdef")
	if err := os.WriteFile(secretPath, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	sw := startSwitch(t, swtch.Config{Admin: "127.0.0.1:0", Admission: swtch.AdmissionRegistered, AdminSecretFile: secretPath})
	addr := sw.Addr().String()
	const job, world, elements = 31, 4, 50_000
	ctx := context.Background()

	join := func() error {
		s, err := hostlib.Join(ctx, hostlib.Options{Switch: addr, Job: job, Token: 42, Rank: 0, World: world,
			DType: wire.Float32, Op: wire.OpSum, Elements: elements, JoinTimeout: 10 * time.Second})
		if err == nil {
			s.Close()
		}
		return err
	}
	wantRefused := func(err error, code wire.ErrorCode, text string) {
		t.Helper()
		var se *hostlib.SwitchError
		if !errors.As(err, &se) || se.Code != code || !strings.Contains(se.Message, text) {
			t.Fatalf("join: %v, want a switch error %v saying %q", err, code, text)
		}
	}
	wantRefused(join(), wire.CodeUnknownJob, "job 31 is not registered")

	admin, err := swtch.NewAdminClient(sw.AdminAddr().String(), secret)
	if err != nil {
		t.Fatal(err)
	}
	grant := swtch.JobGrant{Job: job, TokenSHA256: swtch.TokenSHA256(42), World: world, MemoryCapBytes: 64 << 20, Sources: []string{"10.0.0.0/8"}}
	if _, err := admin.Register(ctx, grant, false); err != nil {
		t.Fatal(err)
	}
	wantRefused(join(), wire.CodeBadRequest, "joined from 127.0.0.1, outside the sources registered for the job")
	grant.Sources = []string{"127.0.0.0/8", "::1"}
	if _, err := admin.Register(ctx, grant, true); err != nil {
		t.Fatal(err)
	}

	ss := joinRanks(t, addr, job, world, elements)
	bufs := make([][]float32, world)
	for r := range bufs {
		bufs[r] = make([]float32, elements)
		for i := range bufs[r] {
			bufs[r][i] = float32((r + 1) * (i % 1000))
		}
	}
	allreduceAll(t, ss, bufs)
	for r, b := range bufs {
		for i, v := range b {
			if want := float32(10 * (i % 1000)); v != want { // (1+2+3+4)·x
				t.Fatalf("rank %d element %d = %v, want %v", r, i, v, want)
			}
		}
	}
	list, err := admin.List(ctx)
	if err != nil || len(list.Jobs) != 1 || list.Jobs[0].State != "running" || list.Jobs[0].HeldBytes <= 0 || list.Jobs[0].HeldBytes > grant.MemoryCapBytes {
		t.Fatalf("list: %+v, %v; want job 31 running within its cap", list, err)
	}

	del, err := admin.Delete(ctx, job)
	if err != nil || !del.Ended {
		t.Fatalf("delete: %+v, %v; want the running job ended", del, err)
	}
	err = hostlib.AllReduce(ctx, ss[0], bufs[0])
	var se *hostlib.SwitchError
	// The switch queued the members' Error before DELETE answered, so it
	// reaches the host ahead of any answer to the call's data.
	if !errors.As(err, &se) || se.Code != wire.CodeUnknownJob || !strings.Contains(se.Message, "the operator unregistered it") {
		t.Fatalf("allreduce after DELETE: %v, want the switch's unknown-job error naming the DELETE", err)
	}
	wantRefused(join(), wire.CodeUnknownJob, "job 31 is not registered")

	scraped := scrapeAll(t, sw)
	// A join is resent every 100 ms until answered: on a slow machine a
	// refused host may have asked more than once.
	for _, want := range []struct {
		series   string
		min, max float64
	}{{`flare_admission_refusals_total{reason="unregistered"}`, 2, 1e9}, {`flare_admission_refusals_total{reason="source"}`, 1, 1e9}, {`flare_registered_jobs`, 0, 0}} {
		v, ok := scraped[want.series]
		if !ok {
			t.Errorf("/metrics lacks %s", want.series)
			continue
		}
		if v < want.min || v > want.max {
			t.Errorf("%s = %v, want %v..%v", want.series, v, want.min, want.max)
		}
	}
}
