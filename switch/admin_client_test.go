package swtch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// NewAdminClient takes HOST:PORT or an http(s) URL (a trailing slash
// dropped) and refuses any other scheme, and an empty secret, by name.
func TestAdminClientAddress(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:9470":          "http://127.0.0.1:9470",
		"http://127.0.0.1:9470/":  "http://127.0.0.1:9470",
		"https://switch.lan:9470": "https://switch.lan:9470",
	} {
		c, err := NewAdminClient(addr, []byte("s"))
		if err != nil || c.base != want {
			t.Errorf("NewAdminClient(%q): base %v, %v; want %q", addr, c, err, want)
		}
	}
	if _, err := NewAdminClient("ftp://127.0.0.1:9470", []byte("s")); err == nil || !strings.Contains(err.Error(), `admin address "ftp://127.0.0.1:9470": want HOST:PORT or an http:// URL`) {
		t.Errorf("an ftp:// address: %v, want an error naming the address and the forms", err)
	}
	if _, err := NewAdminClient("127.0.0.1:9470", nil); err == nil || !strings.Contains(err.Error(), "admin secret: empty") {
		t.Errorf("no secret: %v, want an error naming the secret", err)
	}
}

// adminRequest is what the client sent.
type adminRequest struct {
	method, path, auth, contentType, body string
}

// fakeAdmin answers every request with status and body, and records
// what it was asked.
func fakeAdmin(t *testing.T, status int, body string) (*AdminClient, *[]adminRequest) {
	t.Helper()
	var got []adminRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, adminRequest{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)})
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := NewAdminClient(srv.URL, []byte("sesame"))
	if err != nil {
		t.Fatal(err)
	}
	return c, &got
}

// Each call is its method and path with the bearer secret, a body only
// where it sends one (JSON, so marked), and any 2xx answer decoded.
func TestAdminClientRequests(t *testing.T) {
	ctx := context.Background()
	grant := JobGrant{Job: 7, World: 2, Sources: []string{"10.0.0.0/8"}}
	grantJSON, _ := json.Marshal(grant)
	c, got := fakeAdmin(t, http.StatusCreated, `{"job":7,"world":2,"state":"registered"}`)
	if r, err := c.Register(ctx, grant, false); err != nil || r.Job != 7 || r.World != 2 || r.State != "registered" {
		t.Errorf("Register: %+v, %v; want job 7 of 2, registered", r, err)
	}
	if _, err := c.Register(ctx, grant, true); err != nil {
		t.Errorf("Register, replacing: %v", err)
	}
	c2, got2 := fakeAdmin(t, http.StatusOK, `{"job":7,"ended":true}`)
	if d, err := c2.Delete(ctx, 7); err != nil || !d.Ended || d.Job != 7 {
		t.Errorf("Delete: %+v, %v; want job 7 ended", d, err)
	}
	if _, err := c2.List(ctx); err != nil {
		t.Errorf("List: %v", err)
	}
	want := []adminRequest{
		{"POST", "/v1/jobs", "Bearer sesame", "application/json", string(grantJSON)},
		{"PUT", "/v1/jobs", "Bearer sesame", "application/json", string(grantJSON)},
		{"DELETE", "/v1/jobs/7", "Bearer sesame", "", ""},
		{"GET", "/v1/jobs", "Bearer sesame", "", ""},
	}
	if all := append(*got, *got2...); !slices.Equal(all, want) {
		t.Errorf("requests %+v, want %+v", all, want)
	}
}

// An answer outside 2xx is an AdminError with the status and the switch's
// explanation: its JSON error, or else the body's text; an answer that is
// not what a switch sends, or larger than any it sends (16 MiB), is an
// error that says so.
func TestAdminClientErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		status  int
		body    string
		admin   *AdminError
		message string
	}{
		{http.StatusConflict, `{"error":"job 7 is registered already"}`, &AdminError{409, "job 7 is registered already"}, "switch admin: 409 Conflict: job 7 is registered already"},
		{http.StatusUnauthorized, "  bad secret\n", &AdminError{401, "bad secret"}, "switch admin: 401 Unauthorized: bad secret"},
		{http.StatusBadGateway, `{"error":""}`, &AdminError{502, `{"error":""}`}, `switch admin: 502 Bad Gateway: {"error":""}`},
		{http.StatusOK, "<html>", nil, "switch admin: GET /v1/jobs: the answer is not what a switch sends"},
		{http.StatusOK, `{"jobs":[` + strings.Repeat(`{"job":1},`, 2<<20) + `{"job":1}]}`, nil, "switch admin: GET /v1/jobs: the answer is not what a switch sends"},
	} {
		c, _ := fakeAdmin(t, tc.status, tc.body)
		_, err := c.List(ctx)
		var ae *AdminError
		if err == nil || !strings.Contains(err.Error(), tc.message) || errors.As(err, &ae) != (tc.admin != nil) || (ae != nil && *ae != *tc.admin) {
			t.Errorf("status %d, %d bytes: %v (%+v), want %q (%+v)", tc.status, len(tc.body), err, ae, tc.message, tc.admin)
		}
	}
}
