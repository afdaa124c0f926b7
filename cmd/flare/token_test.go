package main

import (
	"context"
	"strings"
	"testing"

	"github.com/flare-net/flare/internal/bench"
)

// The job token: --token, else FLARE_TOKEN, else random when every rank
// runs here; separate processes without one are refused.
func TestResolveToken(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        bench.Config
		flag     string
		flagSet  bool
		env      string
		want     uint64 // 0: random
		errorHas string
	}{
		{name: "flag, decimal", c: bench.Config{Rank: 0, World: 2}, flag: "4711", flagSet: true, env: "9", want: 4711},
		{name: "flag, hex", c: bench.Config{Rank: 0, World: 2}, flag: "0x00000000deadbeef", flagSet: true, want: 0xdeadbeef},
		{name: "env", c: bench.Config{Rank: 1, World: 2}, env: "0xabc", want: 0xabc},
		{name: "bad env", c: bench.Config{Rank: 1, World: 2}, env: "abc", errorHas: `FLARE_TOKEN "abc"`},
		{name: "bad flag", c: bench.Config{Ranks: 2}, flag: "-1", flagSet: true, errorHas: `--token "-1"`},
		{name: "one process", c: bench.Config{Ranks: 4}},
		{name: "ring", c: bench.Config{Rank: 0, World: 2, Algo: "ring"}},
		{name: "separate processes", c: bench.Config{Rank: 3, World: 4}, errorHas: "--rank 3: no job token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			err := resolveToken(&c, tc.flag, tc.flagSet, tc.env)
			switch {
			case tc.errorHas != "":
				if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
					t.Fatalf("err %v; want one saying %q", err, tc.errorHas)
				}
			case err != nil:
				t.Fatal(err)
			case tc.want != 0 && c.Token != tc.want:
				t.Errorf("token %#x, want %#x", c.Token, tc.want)
			case tc.want == 0:
				d := tc.c
				if resolveToken(&d, "", false, ""); d.Token == c.Token {
					t.Errorf("two random tokens are both %#x", c.Token)
				}
			}
		})
	}
}

// flare token prints a fresh token that --token takes.
func TestTokenCommand(t *testing.T) {
	var a, b strings.Builder
	if err := run(context.Background(), []string{"token"}, &a, nil); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"token"}, &b, nil); err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(a.String())
	if len(s) != 18 || !strings.HasPrefix(s, "0x") || s == strings.TrimSpace(b.String()) {
		t.Errorf("flare token printed %q then %q; want two different 0x-prefixed 16-digit tokens", s, b.String())
	}
	if _, err := parseToken("--token", s); err != nil {
		t.Error(err)
	}
	if err := run(context.Background(), []string{"token", "0x1"}, &a, nil); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("flare token 0x1: %v, want a usage error", err)
	}
}
