package main

import (
	"context"
	"strings"
	"testing"
)

// The job token: --token, else FLARE_TOKEN, else random when every rank
// runs here; separate processes without one are refused.
func TestResolveToken(t *testing.T) {
	for _, tc := range []struct {
		name     string
		c        arConfig
		flag     string
		flagSet  bool
		env      string
		want     uint64 // 0: random
		errorHas string
	}{
		{name: "flag, decimal", c: arConfig{rank: 0, world: 2}, flag: "4711", flagSet: true, env: "9", want: 4711},
		{name: "flag, hex", c: arConfig{rank: 0, world: 2}, flag: "0x00000000deadbeef", flagSet: true, want: 0xdeadbeef},
		{name: "env", c: arConfig{rank: 1, world: 2}, env: "0xabc", want: 0xabc},
		{name: "bad env", c: arConfig{rank: 1, world: 2}, env: "abc", errorHas: `FLARE_TOKEN "abc"`},
		{name: "bad flag", c: arConfig{ranks: 2}, flag: "-1", flagSet: true, errorHas: `--token "-1"`},
		{name: "one process", c: arConfig{ranks: 4}},
		{name: "ring", c: arConfig{rank: 0, world: 2, algo: "ring"}},
		{name: "separate processes", c: arConfig{rank: 3, world: 4}, errorHas: "--rank 3: no job token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			err := c.resolveToken(tc.flag, tc.flagSet, tc.env)
			switch {
			case tc.errorHas != "":
				if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
					t.Fatalf("err %v; want one saying %q", err, tc.errorHas)
				}
			case err != nil:
				t.Fatal(err)
			case tc.want != 0 && c.token != tc.want:
				t.Errorf("token %#x, want %#x", c.token, tc.want)
			case tc.want == 0:
				d := tc.c
				if d.resolveToken("", false, ""); d.token == c.token {
					t.Errorf("two random tokens are both %#x", c.token)
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
}
