// Package httpload is the HTTP workload: uploads (PUT, or POST of a raw body
// or a multipart form) and downloads (GET, whole or a range) of bodies of any
// size against any HTTP service, streamed both ways so memory stays flat at
// any size. It can log in first and carry the cookie or token, and download
// what each upload returned by id, checking the bytes.
package httpload

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptrace"
	"net/textproto"
	neturl "net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/rawconn"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

// HTTP is the workload.
type HTTP struct {
	opts    Options
	client  *http.Client
	dialed  atomic.Int64
	bearer  string
	content datagen.Content
	// urls and ids are read from URLFile and IDFile by Prepare.
	urls, ids []string
	// kept are the ids uploads returned, by index (KeepIDs).
	keptMu sync.Mutex
	kept   map[int64]string
}

// New validates opts.
func New(opts Options) (*HTTP, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	// A fixed content seed: body i of a given size is the same in every
	// process, so a later download run can verify what an upload run sent.
	return &HTTP{opts: opts, content: datagen.ContentOf(opts.Data, 1)}, nil
}

// Kind implements workload.Workload.
func (h *HTTP) Kind() string { return "http" }

// Params implements workload.Workload.
func (h *HTTP) Params() map[string]string {
	o := &h.opts
	p := map[string]string{"mode": o.Mode, "url": redact.URL(o.URL), "concurrency": fmt.Sprint(o.Concurrency)}
	if !o.Sizes.Empty() { // a download of what the server sends has no size of its own
		p["size"] = o.Sizes.String()
	}
	if o.Mode == Upload {
		p["method"] = o.Method
	}
	if o.FormField != "" {
		p["form_field"] = o.FormField
	}
	if o.Runtime > 0 {
		p["runtime"] = o.Runtime.String()
	}
	if o.Count > 0 {
		p["count"] = fmt.Sprint(o.Count)
	}
	if o.Rate > 0 {
		p["rate"] = fmt.Sprint(o.Rate)
	}
	if o.RateProcess != driver.Linear {
		p["rate-process"] = o.RateProcess.String()
	}
	if o.DownloadURL != "" {
		p["download_url"] = redact.URL(o.DownloadURL)
	}
	if o.Segment.Split() {
		p["segments"] = fmt.Sprint(o.Segment.N)
	}
	if o.RangeSize > 0 {
		p["range_size"] = units.FormatSize(o.RangeSize)
	}
	switch {
	case o.H2C:
		p["protocol"] = "h2c"
	case o.HTTP2:
		p["protocol"] = "h2"
	}
	return p
}

// Prepare reads the URL or id file, builds the client and logs in.
func (h *HTTP) Prepare(ctx context.Context) error {
	var err error
	if h.opts.URLFile != "" {
		if h.urls, err = readLines(h.opts.URLFile, "--url-file"); err != nil {
			return err
		}
	}
	if h.opts.IDFile != "" {
		if h.ids, err = readLines(h.opts.IDFile, "--id-file"); err != nil {
			return err
		}
	}
	jar, _ := cookiejar.New(nil)
	h.client = &http.Client{Transport: h.transport(), Jar: jar, Timeout: h.opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	h.bearer = h.opts.Bearer
	if h.opts.LoginURL != "" {
		if err := h.login(ctx); err != nil {
			return err
		}
	}
	return h.preflight(ctx)
}

// preflight says plainly, before any run, what is wrong with the target,
// as s3 checks its endpoint and bucket: a download fetches the first byte
// of the first URL this process will download (a 404 there is a wrong
// URL, not a schedule of failures); an upload, which must not write
// before its run, connects to the URL's host.
func (h *HTTP) preflight(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	i := int64(h.opts.Segment.I) // this process's first operation
	url := expand(h.opts.URL, i, 0, "")
	switch {
	case h.opts.Mode != Download:
		u, err := neturl.Parse(url)
		if err != nil || u.Host == "" {
			return &workload.InputError{Err: fmt.Errorf("--url %s: want http(s)://host[:port]/path", redact.URL(h.opts.URL))}
		}
		port := u.Port()
		switch {
		case port == "" && u.Scheme == "https":
			port = "443"
		case port == "":
			port = "80"
		}
		addr := net.JoinHostPort(u.Hostname(), port)
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return &workload.InputError{Err: fmt.Errorf("--url %s: %s unreachable (%v)", redact.URL(h.opts.URL), addr, unwrapNet(err))}
		}
		return c.Close()
	case len(h.urls) > 0:
		url = h.urls[i%int64(len(h.urls))]
	case len(h.ids) > 0:
		url = expand(h.opts.URL, i, 0, h.ids[i%int64(len(h.ids))])
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return &workload.InputError{Err: fmt.Errorf("download %s: %v", redact.URL(url), err)}
	}
	h.decorate(req)
	req.Header.Set("Range", "bytes=0-0")
	resp, err := h.client.Do(req)
	if err != nil {
		return &workload.InputError{Err: fmt.Errorf("download %s, the first, before any run: %v", redact.URL(url), redact.Err(unwrapNet(err)))}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		return &workload.InputError{Err: fmt.Errorf("download %s, the first, before any run: %s; check --url (and --url-file, --id-file, the login)", redact.URL(url), resp.Status)}
	}
	return nil
}

// unwrapNet is a network error's cause, without the request it repeats.
func unwrapNet(err error) error {
	var ue *neturl.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (h *HTTP) transport() http.RoundTripper {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		h.dialed.Add(1)
		return rawconn.Wrap(c), nil
	}
	tlsConf := &tls.Config{InsecureSkipVerify: h.opts.Insecure} //nolint:gosec // only with --insecure
	if h.opts.H2C {
		return &http2.Transport{AllowHTTP: true, DisableCompression: true,
			DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
				return dial(ctx, network, addr)
			}}
	}
	tr := &http.Transport{DialContext: dial, TLSClientConfig: tlsConf, ForceAttemptHTTP2: h.opts.HTTP2,
		MaxIdleConns: 2 * h.opts.Concurrency, MaxIdleConnsPerHost: 2 * h.opts.Concurrency, DisableCompression: true,
		IdleConnTimeout: 90 * time.Second, WriteBufferSize: 256 << 10, ReadBufferSize: 256 << 10}
	if !h.opts.HTTP2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return tr
}

// login posts the login body (JSON when it starts with "{", else a form)
// and keeps the cookies the jar collects, or the token at LoginToken.
func (h *HTTP) login(ctx context.Context) error {
	o := &h.opts
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.LoginURL, strings.NewReader(o.LoginBody))
	if err != nil {
		return &workload.InputError{Err: fmt.Errorf("--login-url %q: %w", redact.URL(o.LoginURL), redact.Err(err))}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if strings.HasPrefix(strings.TrimSpace(o.LoginBody), "{") {
		req.Header.Set("Content-Type", "application/json")
	}
	h.decorate(req)
	resp, err := h.client.Do(req)
	if err != nil {
		return &workload.InputError{Err: fmt.Errorf("--login-url %s: %w", redact.URL(o.LoginURL), redact.Err(err))}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	for _, c := range resp.Cookies() {
		redact.Secret(c.Value) // a session is a secret
	}
	if resp.StatusCode >= 300 {
		return &workload.InputError{Err: fmt.Errorf("--login-url %s: login refused with %s: %s", redact.URL(o.LoginURL), resp.Status, snippet(body))}
	}
	if o.LoginToken != "" {
		tok, err := jsonField(body, o.LoginToken)
		if err != nil {
			// The reply holds the session: name its fields, never its values.
			return &workload.InputError{Err: fmt.Errorf("--login-token %s: %w in the login reply (%s)", o.LoginToken, err, fieldNames(body))}
		}
		redact.Secret(tok)
		h.bearer = tok
	}
	return nil
}

// decorate adds the headers and credentials every request carries.
func (h *HTTP) decorate(req *http.Request) {
	for k, vs := range h.opts.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if h.opts.Basic != "" {
		user, pass, _ := strings.Cut(h.opts.Basic, ":")
		req.SetBasicAuth(user, pass)
	}
	if h.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+h.bearer)
	}
}

// Close implements workload.Workload.
func (h *HTTP) Close() error {
	if h.client != nil {
		h.client.CloseIdleConnections()
	}
	return nil
}

// Run implements workload.Workload.
func (h *HTTP) Run(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, error) {
	o := &h.opts
	var next, mismatched, verified atomic.Int64
	dialed := h.dialed.Load()
	// A segment runs its share: its workers are numbered in the whole,
	// its operations are every N-th index of the whole from its own.
	seg := o.Segment
	concurrency, count, stride := seg.Share(o.Concurrency), o.Count, int64(max(seg.N, 1))
	if count > 0 {
		count = int64(seg.Share(int(count)))
	}
	most := concurrency
	if o.MaxConcurrency > 0 {
		most = max(seg.Share(o.MaxConcurrency), concurrency)
	}
	dopts := driver.Options{Workers: most, Runtime: o.Runtime}
	if progress != nil {
		dopts.Progress = func(_ time.Duration, ops, bytes int64) { progress(ops, bytes) }
	}
	// Every run opens its own connections, as the first did: a pool kept
	// warm from the run before would make runs depend on their order.
	h.client.CloseIdleConnections()
	workers := make([]*worker, most)
	pace := driver.NewPacer(seg.Rate(o.Rate), o.RateProcess, workload.ArrivalSeed(ctx, seg.I))
	var reserve *driver.Reserve
	if most > concurrency {
		reserve = driver.NewReserve(concurrency, most)
		pace.Grow(reserve)
	}
	res, err := driver.Run(ctx, dopts, func(ctx context.Context, local int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
		if local >= concurrency && !reserve.Wait(stop, rec) {
			return nil
		}
		id := seg.First(o.Concurrency) + local
		if local >= concurrency { // a worker the schedule added: numbered past the whole's
			id = o.Concurrency + seg.I*o.MaxConcurrency + local - concurrency
		}
		w := &worker{h: h, id: id, clock: clock, rec: rec, rng: rand.New(rand.NewPCG(uint64(id)+1, 3)), paced: pace != nil,
			buf: make([]byte, 256<<10), mismatched: &mismatched, verified: &verified}
		workers[local] = w
		w.ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotFirstResponseByte: func() { w.firstByte.CompareAndSwap(0, clock.Now()) },
		})
		for !stop.Stopped() {
			i := next.Add(1) - 1
			if count > 0 && i >= count {
				reserve.Spent()
				return nil
			}
			if pace != nil {
				w.asked = clock.Now()
				w.due, w.responded = pace.Due(clock, w.asked), false
				if !driver.SleepUntil(clock, w.due, stop) { // the run ended while this worker waited for its turn
					return nil
				}
			}
			w.operation(i*stride + int64(seg.I))
		}
		return nil
	})
	if res == nil {
		return nil, err
	}
	res.Extra = metrics.WithExtra(res.Extra, map[string]float64{"connections_opened": float64(h.dialed.Load() - dialed)})
	active := concurrency
	if reserve != nil {
		active = int(reserve.Peak())
		maps.Copy(res.Extra, reserve.Figures())
	}
	if o.DownloadURL != "" {
		activeTimes(res, workers, active)
	}
	if o.Verify {
		verifyFigures(res, verified.Load(), mismatched.Load())
	}
	return res, err
}

// verifyFigures adds what the downloads' check found: a download that
// differs from its upload is counted as a failed download too.
func verifyFigures(res *metrics.Result, verified, mismatched int64) {
	res.Extra["verify_checked"] = float64(verified)
	res.Extra["verify_mismatched"] = float64(mismatched)
	res.Extra["verify_missing"] = 0
	if mismatched > 0 {
		res.Notes = append(res.Notes, metrics.Note{Code: "verify-failed", Message: fmt.Sprintf("%d of %d downloads differ from what was uploaded", mismatched, verified)})
	}
}

// activeTimes sets each direction's active time when each worker
// uploads, then downloads what it uploaded: each direction's rates divide
// by the time spent in it, not by the whole run, of which it had only a
// share (active: the workers that ran).
func activeTimes(res *metrics.Result, workers []*worker, active int) {
	var busy [2]int64
	for _, w := range workers {
		if w != nil {
			busy[0] += w.busyNs[0]
			busy[1] += w.busyNs[1]
		}
	}
	for i, op := range []metrics.Op{metrics.Upload, metrics.Download} {
		res.ByOp[op].ActiveS = float64(busy[i]) / 1e9 / float64(active)
	}
}

// readLines reads a file of one value per line; blank lines and # comments
// are skipped.
func readLines(path, flag string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &workload.InputError{Err: fmt.Errorf("%s: %w", flag, err)}
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &workload.InputError{Err: fmt.Errorf("%s %s: %w", flag, path, err)}
	}
	if len(out) == 0 {
		return nil, &workload.InputError{Err: fmt.Errorf("%s %s: empty; want one value per line", flag, path)}
	}
	return out, nil
}

// Outputs implements workload.Outputter: with KeepIDs, what the uploads
// of the last run returned, in the order of their index.
func (h *HTTP) Outputs() []string {
	h.keptMu.Lock()
	defer h.keptMu.Unlock()
	idx := slices.Sorted(maps.Keys(h.kept))
	out := make([]string, len(idx))
	for n, i := range idx {
		out[n] = h.kept[i]
	}
	h.kept = nil
	return out
}

func (h *HTTP) keep(i int64, id string) {
	h.keptMu.Lock()
	defer h.keptMu.Unlock()
	if h.kept == nil {
		h.kept = map[int64]string{}
	}
	h.kept[i] = id
}

// expand fills a URL template.
func expand(tmpl string, i int64, worker int, id string) string {
	return strings.NewReplacer("{{i}}", strconv.FormatInt(i, 10), "{{worker}}", strconv.Itoa(worker), "{{id}}", id).Replace(tmpl)
}

// formBody wraps a body as a multipart form with one file field and the
// extra fields; its length is known, so it streams with a Content-Length.
func formBody(field string, extra map[string]string, name string, body io.Reader, size int64) (io.Reader, int64, string) {
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	for k, v := range extra {
		_ = mw.WriteField(k, v)
	}
	hdr := textproto.MIMEHeader{}
	hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, field, name))
	hdr.Set("Content-Type", "application/octet-stream")
	_, _ = mw.CreatePart(hdr)
	prefix := append([]byte(nil), head.Bytes()...)
	head.Reset()
	_ = mw.Close()
	suffix := head.String() // Close writes the CRLF that ends the part, then the closing boundary
	return io.MultiReader(bytes.NewReader(prefix), body, strings.NewReader(suffix)),
		int64(len(prefix)) + size + int64(len(suffix)), mw.FormDataContentType()
}

// jsonField reads a dotted path (data.id) of a JSON document as a string.
func jsonField(body []byte, path string) (string, error) {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("response is not JSON")
	}
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("no field %q", path)
		}
		if v, ok = m[key]; !ok {
			return "", fmt.Errorf("no field %q", path)
		}
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("field %q is not a string or number", path)
}

// fieldNames lists the top-level fields of a JSON object, without their
// values.
func fieldNames(b []byte) string {
	var doc map[string]json.RawMessage
	if json.Unmarshal(b, &doc) != nil {
		return "not a JSON object"
	}
	names := slices.Sorted(maps.Keys(doc))
	return "its fields: " + strings.Join(names, ", ")
}

func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
