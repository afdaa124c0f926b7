package swtch

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/flare-net/flare/wire"
)

// RegisteredJob is one registration as GET /v1/jobs lists it: never the
// token, nor its hash.
type RegisteredJob struct {
	Job            uint32   `json:"job"`
	World          int      `json:"world"`
	MemoryCapBytes int64    `json:"memory_cap_bytes"`
	Sources        []string `json:"sources"`
	// State is "registered" (no member has joined), "joining" (some have)
	// or "running" (admitted).
	State     string `json:"state"`
	Joined    int    `json:"joined"`     // members joined now
	HeldBytes int64  `json:"held_bytes"` // what the running job holds (heldBytes); 0 before
}

// JobList is GET /v1/jobs: the admission mode and the registrations, by
// job id.
type JobList struct {
	Admission string          `json:"admission"`
	Jobs      []RegisteredJob `json:"jobs"`
}

// JobDeleted is DELETE /v1/jobs/{id}: whether a job was running (it has
// ended, and its members were told).
type JobDeleted struct {
	Job   uint32 `json:"job"`
	Ended bool   `json:"ended"`
}

// maxAdminBody bounds a registration request.
const maxAdminBody = 64 << 10

// Job states of RegisteredJob.State.
const (
	stateRegistered = "registered"
	stateJoining    = "joining"
	stateRunning    = "running"
)

// routeJobs mounts the registry's API on mux.
func (s *Switch) routeJobs(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, s.listJobs()) })
	mux.HandleFunc("POST /v1/jobs", func(w http.ResponseWriter, r *http.Request) { s.serveRegister(w, r, false) })
	mux.HandleFunc("PUT /v1/jobs", func(w http.ResponseWriter, r *http.Request) { s.serveRegister(w, r, true) })
	mux.HandleFunc("DELETE /v1/jobs/{id}", s.serveDelete)
}

// openRead reports whether a request may be served without the bearer
// secret: reads of /metrics and /healthz always, and of /debug/pprof/
// while the switch has no secret (as before there was one). Every write,
// and the /v1/ API, needs it.
func (s *Switch) openRead(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch p := path.Clean("/" + r.URL.Path); {
	case p == "/metrics" || p == "/healthz":
		return true
	case p == "/debug/pprof" || strings.HasPrefix(p, "/debug/pprof/"):
		return s.registry.secret == nil
	}
	return false
}

// authorize answers 401 to a request that needs the bearer secret and
// lacks it, and passes the rest to next.
func (s *Switch) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.openRead(r) {
			next.ServeHTTP(w, r)
			return
		}
		bearer, ok := bearerToken(r.Header.Get("Authorization"))
		var why string
		switch {
		case s.registry.secret == nil:
			why = "this switch takes no authenticated admin requests: start it with " + s.cfg.setting("AdminSecretFile")
		case !ok:
			why = "missing bearer secret: send Authorization: Bearer <the contents of the switch's " + s.cfg.setting("AdminSecretFile") + ">"
		case !s.registry.authorized(bearer):
			why = "wrong bearer secret"
		default:
			next.ServeHTTP(w, r)
			return
		}
		s.registry.unauthorized.Add(1)
		w.Header().Set("WWW-Authenticate", `Bearer realm="flare-admin"`)
		writeError(w, http.StatusUnauthorized, why)
	})
}

// bearerToken takes the credentials of an "Authorization: Bearer X" header.
func bearerToken(h string) (string, bool) {
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

func (s *Switch) serveRegister(w http.ResponseWriter, r *http.Request, replace bool) {
	if s.registry.mode != AdmissionRegistered {
		writeError(w, http.StatusConflict, "this switch admits jobs openly ("+s.cfg.setting("Admission")+" open): a registration would have no effect; start it with registered admission")
		return
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAdminBody))
	dec.DisallowUnknownFields()
	var req JobGrant
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "request body: "+jsonError(err))
		return
	}
	if dec.Decode(&struct{}{}) != io.EOF {
		writeError(w, http.StatusBadRequest, "request body: want one JSON object (a JobGrant)")
		return
	}
	g, err := parseGrant(&req)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	status, entry, err := s.register(g, replace)
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	writeJSON(w, status, entry)
}

// jsonError words a decoding error for the caller.
func jsonError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%q: a JSON %s where a %s belongs", te.Field, te.Value, te.Type)
	}
	return err.Error()
}

// register adds a registration (POST: a new job id only; PUT: new, or
// replacing one). A replacement that changes the grant ends the job if it
// runs, since it was admitted under a grant that no longer holds; the
// same grant again changes nothing.
func (s *Switch) register(g *grant, replace bool) (int, RegisteredJob, error) {
	r := s.registry
	s.jobs.mu.Lock()
	old := r.grants[g.job]
	var ended *endedJob
	switch {
	case old != nil && !replace:
		s.jobs.mu.Unlock()
		return http.StatusConflict, RegisteredJob{}, fmt.Errorf("job %d is registered already: PUT /v1/jobs replaces a registration (flare jobs register --replace), DELETE /v1/jobs/%d removes it", g.job, g.job)
	case old == nil && len(r.grants) >= maxGrants:
		s.jobs.mu.Unlock()
		return http.StatusConflict, RegisteredJob{}, fmt.Errorf("%d jobs are registered, the most the switch holds: delete some first", len(r.grants))
	case old != nil && !old.equal(g):
		if j := s.jobs.get(g.job); j != nil {
			ended = s.endGranted(j, "re-registered")
		}
	}
	r.grants[g.job] = g
	r.count.Store(int64(len(r.grants)))
	entry := s.listed(g)
	s.jobs.mu.Unlock()
	ended.tell(s, fmt.Sprintf("job %d ended: the operator registered it again with another grant; join again", g.job))
	s.log.Info("job registered", "job", g.job, "world", g.world, "memory_cap_bytes", g.memoryCap, "sources", strings.Join(g.sourceStrings(), ","), "replaced", old != nil)
	if old != nil {
		return http.StatusOK, entry, nil
	}
	return http.StatusCreated, entry, nil
}

func (s *Switch) serveDelete(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("job id %q: want a decimal integer in 0..%d", r.PathValue("id"), uint32(1<<32-1)))
		return
	}
	res, ok := s.unregister(uint32(id))
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("job %d is not registered", id))
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// unregister removes a registration and ends its job if it runs: its
// members are told, and its buffers return once its queued packets ran.
func (s *Switch) unregister(id uint32) (JobDeleted, bool) {
	s.jobs.mu.Lock()
	if _, ok := s.registry.grants[id]; !ok {
		s.jobs.mu.Unlock()
		return JobDeleted{}, false
	}
	delete(s.registry.grants, id)
	s.registry.count.Store(int64(len(s.registry.grants)))
	var ended *endedJob
	if j := s.jobs.get(id); j != nil {
		ended = s.endGranted(j, "unregistered")
	}
	s.jobs.mu.Unlock()
	ended.tell(s, fmt.Sprintf("job %d ended: the operator unregistered it (DELETE /v1/jobs/%d)", id, id))
	s.log.Info("job unregistered", "job", id, "ended", ended != nil)
	return JobDeleted{Job: id, Ended: ended != nil}, true
}

// endedJob is what the members of a job the registry ended are told with.
type endedJob struct {
	id      uint32
	token   uint64
	members []netip.AddrPort
}

// endGranted ends a job for the registry and returns whom to tell. The
// caller holds s.jobs.mu and tells them after releasing it.
func (s *Switch) endGranted(j *job, why string) *endedJob {
	e := &endedJob{id: j.id, token: j.token, members: slices.Clone(j.members)}
	s.endLocked(j, why)
	return e
}

// tell sends every member that had joined an Error for the job: unknown
// job, as a host hears at its next packet anyway, but at once and with
// the reason. A nil e tells nobody.
func (e *endedJob) tell(s *Switch, msg string) {
	if e == nil {
		return
	}
	for m, to := range e.members {
		if !to.IsValid() {
			continue
		}
		h := wire.Header{Version: wire.Version, Type: wire.TypeError, Job: e.id, Token: e.token, Child: s.rankHere(m)}
		s.send(to, func(b []byte) []byte { return wire.AppendError(b, &h, wire.CodeUnknownJob, msg) })
	}
}

// listJobs is GET /v1/jobs.
func (s *Switch) listJobs() JobList {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	out := JobList{Admission: s.registry.mode, Jobs: make([]RegisteredJob, 0, len(s.registry.grants))}
	for _, g := range s.registry.grants {
		out.Jobs = append(out.Jobs, s.listed(g))
	}
	slices.SortFunc(out.Jobs, func(a, b RegisteredJob) int { return cmp.Compare(a.Job, b.Job) })
	return out
}

// listed describes a registration and its job; the caller holds s.jobs.mu.
func (s *Switch) listed(g *grant) RegisteredJob {
	e := RegisteredJob{Job: g.job, World: g.world, MemoryCapBytes: g.memoryCap, Sources: g.sourceStrings(), State: stateRegistered}
	if j := s.jobs.get(g.job); j != nil {
		e.Joined, e.State = j.joined-j.left, stateJoining
		if j.pend != nil {
			e.Joined = len(j.pend)
		}
		if j.admitted && j.quota != nil {
			e.State, e.HeldBytes = stateRunning, s.heldBytes(j.charge, j.quota)
		}
	}
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// adminErrorBody is the JSON of every error the admin API answers.
type adminErrorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, adminErrorBody{Error: msg})
}
