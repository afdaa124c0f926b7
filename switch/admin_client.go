package swtch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// AdminClient registers, lists and deletes jobs over a switch's admin
// port: what `flare jobs` and a launcher use instead of curl.
type AdminClient struct {
	base   string // http://HOST:PORT
	secret string
	http   *http.Client
}

// NewAdminClient talks to the admin port at addr (HOST:PORT, or an
// http:// or https:// URL) with the bearer secret.
func NewAdminClient(addr string, secret []byte) (*AdminClient, error) {
	base := strings.TrimRight(addr, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("admin address %q: want HOST:PORT or an http:// URL, such as 127.0.0.1:9470", addr)
	}
	if len(secret) == 0 {
		return nil, fmt.Errorf("admin secret: empty (read it with ReadSecretFile)")
	}
	return &AdminClient{base: base, secret: string(secret), http: &http.Client{Timeout: 10 * time.Second}}, nil
}

// AdminError is an admin request the switch refused, with its status and
// its explanation.
type AdminError struct {
	Status  int    // HTTP status, e.g. 401, 409
	Message string // the switch's explanation
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("switch admin: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Register registers a job (POST /v1/jobs): an id the switch has
// registered already is refused with 409. With replace it creates or
// replaces (PUT /v1/jobs); a replacement that changes the grant ends the
// job if it runs.
func (c *AdminClient) Register(ctx context.Context, g JobGrant, replace bool) (RegisteredJob, error) {
	method := http.MethodPost
	if replace {
		method = http.MethodPut
	}
	body, err := json.Marshal(g)
	if err != nil {
		return RegisteredJob{}, err
	}
	var out RegisteredJob
	err = c.do(ctx, method, "/v1/jobs", body, &out)
	return out, err
}

// List lists the registrations and the state of their jobs (GET /v1/jobs).
func (c *AdminClient) List(ctx context.Context) (JobList, error) {
	var out JobList
	err := c.do(ctx, http.MethodGet, "/v1/jobs", nil, &out)
	return out, err
}

// Delete unregisters a job and ends it if it runs (DELETE /v1/jobs/{id}).
func (c *AdminClient) Delete(ctx context.Context, job uint32) (JobDeleted, error) {
	var out JobDeleted
	err := c.do(ctx, http.MethodDelete, "/v1/jobs/"+strconv.FormatUint(uint64(job), 10), nil, &out)
	return out, err
}

func (c *AdminClient) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("switch admin: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<24))
	if err != nil {
		return fmt.Errorf("switch admin: %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e adminErrorBody
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
		}
		return &AdminError{Status: resp.StatusCode, Message: e.Error}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("switch admin: %s %s: the answer is not what a switch sends: %w", method, path, err)
	}
	return nil
}
