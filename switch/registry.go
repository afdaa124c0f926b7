package swtch

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flare-net/flare/hpu"
	"github.com/flare-net/flare/wire"
)

// Admission modes (Config.Admission).
const (
	// AdmissionOpen lets any host that reaches the data port create a job
	// by joining it: the default, for a single-user box.
	AdmissionOpen = "open"
	// AdmissionRegistered admits only jobs an operator or launcher has
	// registered over the admin port (POST /v1/jobs): a join for any other
	// job, from a source outside the registration's prefixes, with another
	// token or another world is refused and creates nothing.
	AdmissionRegistered = "registered"
)

// Bounds of the registry: a launcher's bug cannot make it grow without end.
const (
	maxGrants       = 1 << 16                   // registrations held at once
	maxGrantSources = 256                       // prefixes per registration
	maxMemoryCap    = 1 << 40                   // bytes a registration may grant
	maxGrantWorld   = min(maxChildren, 1<<16-1) // a join's World is 16 bits
	minSecretBytes  = 16
	maxSecretBytes  = 4096
)

// JobGrant is a job's registration as POST and PUT /v1/jobs take it: the
// job may run with this id, this token, this many members, from these
// sources, within this memory. Exactly one of Token and TokenSHA256 is
// set; the switch keeps only the hash.
type JobGrant struct {
	Job uint32 `json:"job"`
	// Token is the job's token in decimal, as a JSON number or string
	// ("token": "12345678901234567890"; a string keeps all 64 bits through
	// clients that read numbers as doubles).
	Token json.Number `json:"token,omitempty"`
	// TokenSHA256 is the hex SHA-256 of the token's 8 bytes in network
	// byte order, as it travels in the header (TokenSHA256 computes it).
	TokenSHA256 string `json:"token_sha256,omitempty"`
	// World is the number of members that join this switch: the hosts'
	// world on a lone switch or a leaf; children plus local hosts on a
	// switch with Children.
	World int `json:"world"`
	// MemoryCapBytes bounds what the job may hold on the switch.
	MemoryCapBytes int64 `json:"memory_cap_bytes"`
	// Sources are the prefixes (CIDR, or a bare address for one host) the
	// members may join from: at least one, at most 256.
	Sources []string `json:"sources"`
}

// TokenSHA256 is the hash a JobGrant may carry instead of the token: the
// hex SHA-256 of the token's 8 bytes in network byte order.
func TokenSHA256(token uint64) string {
	h := tokenHash(token)
	return hex.EncodeToString(h[:])
}

func tokenHash(token uint64) [sha256.Size]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], token)
	return sha256.Sum256(b[:])
}

// grant is a registration as the switch holds it: checked, canonical.
type grant struct {
	job       uint32
	tokenHash [sha256.Size]byte
	world     int
	memoryCap int64
	sources   []netip.Prefix // sorted, without duplicates
}

// parseGrant checks a registration and returns it canonical. Errors name
// the JSON field and the allowed range.
func parseGrant(g *JobGrant) (*grant, error) {
	out := &grant{job: g.Job, world: g.World, memoryCap: g.MemoryCapBytes}
	switch {
	case g.Token != "" && g.TokenSHA256 != "":
		return nil, errors.New(`"token" and "token_sha256": give one of them, not both`)
	case g.Token != "":
		t, err := strconv.ParseUint(string(g.Token), 10, 64)
		if err != nil {
			return nil, fmt.Errorf(`"token" %q: want the job's token, a decimal integer in 0..%d`, string(g.Token), uint64(1<<64-1))
		}
		out.tokenHash = tokenHash(t)
	case g.TokenSHA256 != "":
		h, err := hex.DecodeString(g.TokenSHA256)
		if err != nil || len(h) != sha256.Size {
			return nil, fmt.Errorf(`"token_sha256" %q: want 64 hex digits, the SHA-256 of the token's 8 bytes in network byte order`, g.TokenSHA256)
		}
		copy(out.tokenHash[:], h)
	default:
		return nil, errors.New(`"token" or "token_sha256": the job's token is required`)
	}
	switch {
	case g.World < 1 || g.World > maxGrantWorld:
		return nil, fmt.Errorf(`"world" %d: must be in 1..%d`, g.World, maxGrantWorld)
	case g.MemoryCapBytes < 1 || g.MemoryCapBytes > maxMemoryCap:
		return nil, fmt.Errorf(`"memory_cap_bytes" %d: must be in 1..%d`, g.MemoryCapBytes, int64(maxMemoryCap))
	case len(g.Sources) < 1 || len(g.Sources) > maxGrantSources:
		return nil, fmt.Errorf(`"sources": %d prefixes: give 1..%d (0.0.0.0/0 and ::/0 allow any source)`, len(g.Sources), maxGrantSources)
	}
	for _, s := range g.Sources {
		p, err := parseSource(s)
		if err != nil {
			return nil, fmt.Errorf(`"sources": %w`, err)
		}
		out.sources = append(out.sources, p)
	}
	slices.SortFunc(out.sources, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	out.sources = slices.Compact(out.sources)
	return out, nil
}

// parseSource reads a CIDR prefix, or one address as its own prefix. An
// IPv4-mapped IPv6 prefix becomes the IPv4 one (joins are matched on
// unmapped addresses).
func parseSource(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		p = netip.PrefixFrom(a, a.BitLen()) // (a mapped one is unmapped below)
	} else if p, err = netip.ParsePrefix(s); err != nil {
		return p, fmt.Errorf("%q: want a CIDR prefix such as 10.0.0.0/24 or fd00::/64, or one address", s)
	}
	if p.Masked() != p {
		return p, fmt.Errorf("%q has bits set past the prefix length: did you mean %s?", s, p.Masked())
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p, nil
}

func (g *grant) allows(from netip.Addr) bool {
	from = from.Unmap()
	for _, p := range g.sources {
		if p.Contains(from) {
			return true
		}
	}
	return false
}

func (g *grant) tokenIs(token uint64) bool {
	h := tokenHash(token)
	return subtle.ConstantTimeCompare(h[:], g.tokenHash[:]) == 1
}

func (g *grant) equal(o *grant) bool {
	return g.job == o.job && g.tokenHash == o.tokenHash && g.world == o.world && g.memoryCap == o.memoryCap && slices.Equal(g.sources, o.sources)
}

func (g *grant) sourceStrings() []string {
	out := make([]string, len(g.sources))
	for i, p := range g.sources {
		out[i] = p.String()
	}
	return out
}

// Reasons a join is refused by the registry, and the label values of
// flare_admission_refusals_total.
const (
	refusedUnregistered = "unregistered"
	refusedSource       = "source"
	refusedToken        = "token"
	refusedWorld        = "world"
	refusedMemoryCap    = "memory-cap"
)

var grantRefusalReasons = []string{refusedUnregistered, refusedSource, refusedToken, refusedWorld, refusedMemoryCap}

// registry holds the admission mode, the admin secret and, in registered
// mode, the registrations. grants is guarded by the job table's lock
// (s.jobs.mu), so that a join's check and its job's creation cannot
// interleave with a DELETE.
type registry struct {
	mode         string
	secret       []byte // the admin bearer secret; nil: the admin port takes no writes
	grants       map[uint32]*grant
	count        atomic.Int64    // len(grants), for the metric
	refusals     *reasonCounters // by grantRefusalReasons
	unauthorized atomic.Int64    // admin requests refused for want of the bearer
}

// newRegistry checks the admission settings and reads the admin secret.
func newRegistry(cfg Config) (*registry, error) {
	r := &registry{mode: cfg.Admission, grants: map[uint32]*grant{}, refusals: newReasonCounters("registry refusal", grantRefusalReasons)}
	if r.mode == "" {
		r.mode = AdmissionOpen
	}
	switch {
	case r.mode != AdmissionOpen && r.mode != AdmissionRegistered:
		return nil, fmt.Errorf("Config.Admission = %q: want %s or %s", cfg.Admission, AdmissionOpen, AdmissionRegistered)
	case r.mode == AdmissionRegistered && cfg.Admin == "off":
		return nil, errors.New("Config.Admission = registered with Config.Admin = off: jobs are registered over the admin port; give it an address")
	case r.mode == AdmissionRegistered && cfg.AdminSecretFile == "":
		return nil, errors.New("Config.Admission = registered needs Config.AdminSecretFile: the admin port takes registrations only from holders of that secret")
	}
	if cfg.AdminSecretFile != "" {
		secret, err := ReadSecretFile(cfg.AdminSecretFile)
		if err != nil {
			return nil, fmt.Errorf("Config.AdminSecretFile: %w", err)
		}
		r.secret = secret
	}
	return r, nil
}

// ReadSecretFile reads an admin bearer secret: a regular file, not
// readable by every user, holding 16..4096 bytes once surrounding white
// space is trimmed. The switch and `flare jobs` read it the same way.
func ReadSecretFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s does not exist: create it with (umask 077; head -c 32 /dev/urandom | base64 > %s)", path, path)
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", path)
	case fi.Mode().Perm()&0o004 != 0:
		return nil, fmt.Errorf("%s is readable by every user (mode %#o): chmod o-rwx %s", path, fi.Mode().Perm(), path)
	case fi.Size() > maxSecretBytes:
		return nil, fmt.Errorf("%s holds %d bytes: a secret is at most %d", path, fi.Size(), maxSecretBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return nil, fmt.Errorf("%s is empty: put a secret in it, e.g. (umask 077; head -c 32 /dev/urandom | base64 > %s)", path, path)
	case len(b) < minSecretBytes:
		return nil, fmt.Errorf("%s holds a secret of %d bytes: use at least %d, e.g. head -c 32 /dev/urandom | base64", path, len(b), minSecretBytes)
	}
	return b, nil
}

// authorized reports whether bearer is the admin secret, in time that does
// not depend on how much of it matches (nor on its length).
func (r *registry) authorized(bearer string) bool {
	if r.secret == nil {
		return false
	}
	got, want := sha256.Sum256([]byte(bearer)), sha256.Sum256(r.secret)
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

func (r *registry) refused(reason string) { r.refusals.add(reason) }

// grantJoin checks a join against the job's registration, before the join
// touches the job table: in registered mode a join for a job nobody
// registered, from a source outside its prefixes, with another token or
// another world is refused here and creates no state. The caller holds
// s.jobs.mu; body.World is the member count at this switch.
func (s *Switch) grantJoin(from netip.AddrPort, h *wire.Header, body *wire.JoinBody) *joinError {
	r := s.registry
	if r.mode != AdmissionRegistered {
		return nil
	}
	g := r.grants[h.Job]
	switch {
	case g == nil:
		r.refused(refusedUnregistered)
		return refuse(wire.CodeUnknownJob, "job %d is not registered: this switch admits only jobs registered over its admin port (%s registered; flare jobs register)", h.Job, s.cfg.setting("Admission"))
	case !g.allows(from.Addr()):
		r.refused(refusedSource)
		return refuse(wire.CodeBadRequest, "job %d: rank %d joined from %s, outside the sources registered for the job", h.Job, h.Child, from.Addr())
	case !g.tokenIs(h.Token):
		r.refused(refusedToken)
		return refuse(wire.CodeJobMismatch, "job %d: rank %d joined with a token that is not the job's registered token", h.Job, h.Child)
	case int(body.World) != g.world:
		r.refused(refusedWorld)
		return refuse(wire.CodeJobMismatch, "job %d: rank %d joined with world %d; the job is registered with world %d", h.Job, h.Child, body.World, g.world)
	}
	return nil
}

// capGranted holds a planned job to its registration's memory cap: a job
// whose footprint (heldBytes: its host memory and its L1 quota) exceeds
// the cap is refused with the numbers, and the caller ends it, which
// returns what it reserved. The caller holds s.jobs.mu.
func (s *Switch) capGranted(j *job, p *plan) *joinError {
	g := s.registry.grants[j.id]
	if s.registry.mode != AdmissionRegistered || g == nil {
		return nil
	}
	if held := s.heldBytes(j.charge, p.quota); held > g.memoryCap {
		s.registry.refused(refusedMemoryCap)
		return refuse(wire.CodeRefusedMemory, "job %d needs %d bytes on the switch (%d bytes of host memory and %d aggregation buffers of %d bytes for a window of %d blocks); its registration caps it at %d bytes (memory_cap_bytes): register it with a larger cap, or run the switch with a smaller %s",
			j.id, held, j.charge, p.quota.Limit(), s.cfg.HPU.BufferBytes, p.window, g.memoryCap, s.cfg.setting("Window"))
	}
	return nil
}

// heldBytes is the footprint a registration's memory cap bounds: the
// job's host memory as admission charged it to the budget (stored
// results, block table, member tables) and the bytes of the aggregation
// buffers reserved for it (its L1 quota).
func (s *Switch) heldBytes(charge int64, q *hpu.Quota) int64 {
	return charge + int64(q.Limit())*int64(s.cfg.HPU.BufferBytes)
}

// registryCollector exports the registry's counters on the admin port.
type registryCollector struct {
	r                            *registry
	registered, refusals, unauth *prometheus.Desc
}

func newRegistryCollector(r *registry) *registryCollector {
	return &registryCollector{
		r:          r,
		registered: prometheus.NewDesc("flare_registered_jobs", "Jobs registered over the admin port (registered admission).", nil, nil),
		refusals:   prometheus.NewDesc("flare_admission_refusals_total", "Joins refused by the job registry, by reason (answered or not).", []string{"reason"}, nil),
		unauth:     prometheus.NewDesc("flare_admin_unauthorized_total", "Admin requests refused for want of the bearer secret (401).", nil, nil),
	}
}

func (c *registryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.registered
	ch <- c.refusals
	ch <- c.unauth
}

func (c *registryCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.registered, prometheus.GaugeValue, float64(c.r.count.Load()))
	c.r.refusals.each(func(reason string, n int64) {
		ch <- prometheus.MustNewConstMetric(c.refusals, prometheus.CounterValue, float64(n), reason)
	})
	ch <- prometheus.MustNewConstMetric(c.unauth, prometheus.CounterValue, float64(c.r.unauthorized.Load()))
}
