package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/flare-net/flare/hostlib"
	"github.com/flare-net/flare/internal/bench"
)

// A job's token is the secret every packet of the job carries: the switch
// drops packets with another, and hosts drop results with another. It
// travels in clear (docs/SECURITY.md), so it keeps out strangers who
// cannot see the traffic, not an on-path attacker; a constant baked into
// the binary kept out no one. So there is no default: ranks in one
// process share a fresh random token, and ranks in separate processes
// must be given the same one (--token or FLARE_TOKEN; flare token prints
// one).

// tokenEnv is the environment variable `flare allreduce --rank` reads the
// job token from when --token is not given.
const tokenEnv = "FLARE_TOKEN"

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("token", "Print a fresh random job token (64 bits, as 0x-hex) for flare allreduce --token or FLARE_TOKEN.\n"+
		"Give every rank of a job the same token.",
		"  flare token\n  export FLARE_TOKEN=$(flare token)   # then every rank's flare allreduce --rank R reads it\n", stdout)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError(fs, "takes no arguments")
	}
	fmt.Fprintf(stdout, "0x%016x\n", hostlib.NewToken())
	return nil
}

// parseToken reads a token as given to --token or FLARE_TOKEN: a decimal
// number, or hex with 0x (what flare token prints).
func parseToken(source, s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want the job's 64-bit token, decimal or 0x-hex (flare token prints a fresh one)", source, s)
	}
	return v, nil
}

// resolveToken sets c.Token: from --token (flag, if given), else from
// FLARE_TOKEN (env), else, when every rank runs in this process, a random
// one. Separate processes (--rank) must share one, so without either it is
// an error saying how to set it. The host ring baseline (--algo ring)
// uses no switch and no token.
func resolveToken(c *bench.Config, flag string, flagSet bool, env string) error {
	switch {
	case flagSet:
		v, err := parseToken("--token", flag)
		c.Token = v
		return err
	case env != "":
		v, err := parseToken(tokenEnv, env)
		c.Token = v
		return err
	case c.Ranks > 0 || c.Algo == "ring":
		c.Token = hostlib.NewToken()
		return nil
	}
	return fmt.Errorf("--rank %d: no job token. Every rank of the job must give the same secret: set it for all of them with\n"+
		"  export %s=$(flare token)\n"+
		"(or pass --token 0x... to each rank); a job's packets carry it, and the switch and hosts drop packets without it", c.Rank, tokenEnv)
}
