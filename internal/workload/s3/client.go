package s3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/workload"
)

// client is a minio-go client whose transport pools one connection per
// worker and counts the connections it opens, so connection churn (a
// client that pools 2 connections for 128 requests and pays a TLS handshake
// for each) shows in the results.
type client struct {
	*minio.Client
	core     minio.Core
	endpoint string
	dialed   atomic.Int64
	// anonymous says no credentials were found: requests go unsigned.
	anonymous bool
	// What listPage signs its requests with, and sends them through.
	http                  *http.Client
	access, secret, token string
	region, lookup        string
}

// newClients returns a client for each endpoint; they count connections
// together.
func newClients(o *Options) ([]*client, error) {
	var out []*client
	for _, ep := range o.endpoints() {
		c, err := newClient(o, ep)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func newClient(o *Options, endpoint string) (*client, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--endpoint %q: want http://host:port or https://host:port", endpoint)
	}
	tlsConf, err := o.tlsConfig(u.Hostname())
	if err != nil {
		return nil, err
	}
	c := &client{endpoint: endpoint}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err == nil {
				c.dialed.Add(1)
			}
			return conn, err
		},
		MaxIdleConns:          o.pool(),
		MaxIdleConnsPerHost:   o.pool(),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     o.HTTP2,
		DisableCompression:    true,
		TLSClientConfig:       tlsConf,
	}
	if !o.HTTP2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	if v, err := credentialsOf(o).GetWithContext(nil); err == nil && v.AccessKeyID != "" {
		redact.Secret(v.AccessKeyID, v.SecretAccessKey, v.SessionToken)
		c.access, c.secret, c.token = v.AccessKeyID, v.SecretAccessKey, v.SessionToken
	} else {
		c.anonymous = true
	}
	lookup := map[string]minio.BucketLookupType{"auto": minio.BucketLookupAuto, "path": minio.BucketLookupPath, "dns": minio.BucketLookupDNS}[o.Lookup]
	rt := transport{rt: errorBodies{tr}, timeout: o.Timeout}
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentialsOf(o), Secure: u.Scheme == "https",
		Transport: rt, Region: o.Region, BucketLookup: lookup, MaxRetries: 1 + o.Retries})
	if err != nil {
		return nil, fmt.Errorf("--endpoint %s: %w", endpoint, err)
	}
	c.Client, c.core = mc, minio.Core{Client: mc}
	c.http = &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	c.region, c.lookup = o.Region, o.Lookup
	return c, nil
}

// emptySHA256 is the SHA-256 of an empty payload, as SigV4 signs it.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// listPage lists up to max keys under prefix: one ListObjectsV2 request,
// signed and sent here because minio-go's one-page listing takes no
// context — neither Ctrl-C, the run's hard stop nor the count of retries
// would reach it. It returns the keys the page holds.
func (c *client) listPage(ctx context.Context, bucket, prefix string, max int) (int, error) {
	u := *c.EndpointURL()
	if c.lookup == "dns" {
		u.Host, u.Path = bucket+"."+u.Host, "/"
	} else {
		u.Path = "/" + bucket + "/"
	}
	u.RawQuery = url.Values{"list-type": {"2"}, "prefix": {prefix}, "max-keys": {strconv.Itoa(max)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	if !c.anonymous {
		req = signer.SignV4(*req, c.access, c.secret, c.token, c.region)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, &noAnswer{err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode >= 300 {
		return 0, errorResponse(http.MethodGet, resp.StatusCode, body)
	}
	// Read as an S3 client reads it: a key whose date or size does not
	// parse is a malformed answer, not a key.
	var page struct {
		XMLName  xml.Name
		Contents []struct {
			Key          string
			LastModified time.Time
			Size         int64
		}
	}
	if err := xml.Unmarshal(body, &page); err != nil {
		return 0, err
	}
	if page.XMLName.Local != "ListBucketResult" {
		return 0, minio.ErrorResponse{StatusCode: resp.StatusCode, Message: "a LIST answer that is not a ListBucketResult: " + notS3Message(body)}
	}
	return len(page.Contents), nil
}

// credentialsOf takes keys from the flags, else AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, else the shared credentials file. They are never
// stored or printed.
func credentialsOf(o *Options) *credentials.Credentials {
	if o.AccessKey != "" {
		return credentials.NewStaticV4(o.AccessKey, o.SecretKey, o.SessionToken)
	}
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.EnvMinio{}, &credentials.FileAWSCredentials{}})
}

// tlsConfig trusts the system's roots and --ca's certificates, or any
// certificate with --insecure.
func (o *Options) tlsConfig(serverName string) (*tls.Config, error) {
	conf := &tls.Config{InsecureSkipVerify: o.Insecure, ServerName: serverName} //nolint:gosec // only with --insecure
	if o.CA == "" {
		return conf, nil
	}
	pem, err := os.ReadFile(o.CA)
	if err != nil {
		return nil, fmt.Errorf("--ca %s: %w", o.CA, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca %s: no PEM certificate in it (want a file of -----BEGIN CERTIFICATE----- blocks)", o.CA)
	}
	conf.RootCAs = pool
	return conf, nil
}

// preflight says plainly, before any load, what is wrong with the endpoint,
// the credentials or the bucket.
func (c *client) preflight(ctx context.Context, o *Options) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	exists, err := c.BucketExists(ctx, o.Bucket)
	if code := minio.ToErrorResponse(err).StatusCode; err != nil && code >= 400 && code < 500 && code != http.StatusNotFound {
		// A HEAD answer has no body, so its code is the client's guess
		// ("400 Bad Request"): a request with a body gets the server's own
		// (SignatureDoesNotMatch, InvalidAccessKeyId, a wrong region's
		// AuthorizationHeaderMalformed, RequestTimeTooSkewed, ...).
		if _, lerr := c.listPage(ctx, o.Bucket, "", 1); lerr == nil {
			exists, err = true, nil
		} else {
			err = lerr
		}
	}
	if err != nil {
		return &workload.InputError{Err: c.describe(err)}
	}
	if exists {
		return nil
	}
	// Some servers answer HEAD bucket with 404 also to wrong credentials;
	// a call that needs valid ones tells the two apart.
	if _, err := c.ListBuckets(ctx); err != nil {
		return &workload.InputError{Err: c.describe(err)}
	}
	if !o.CreateBucket {
		return &workload.InputError{Err: &noBucketError{fmt.Sprintf("--bucket %s does not exist at %s; create it, or add --create-bucket", o.Bucket, c.endpoint)}}
	}
	if err := c.MakeBucket(ctx, o.Bucket, minio.MakeBucketOptions{Region: o.Region}); err != nil {
		// Another segment of the load (or another client) created it
		// between the check and here.
		if code := minio.ToErrorResponse(err).Code; code == "BucketAlreadyOwnedByYou" ||
			(code == "BucketAlreadyExists" && bucketThere(ctx, c, o.Bucket)) {
			return nil
		}
		return &workload.InputError{Err: fmt.Errorf("--create-bucket %s: %w", o.Bucket, c.describe(err))}
	}
	return nil
}

// noBucketError is a bucket the server says is not there, with
// credentials it accepts: to a later verify, every object in it is missing.
type noBucketError struct{ msg string }

func (e *noBucketError) Error() string { return e.msg }

func bucketThere(ctx context.Context, c *client, bucket string) bool {
	ok, err := c.BucketExists(ctx, bucket)
	return err == nil && ok
}

// describe turns a client error into what the user must fix, with what the
// server said.
func (c *client) describe(err error) error {
	var netErr *net.OpError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	resp := minio.ToErrorResponse(err)
	switch {
	case errors.As(err, &certErr):
		return fmt.Errorf("--endpoint %s: TLS certificate not trusted (%v); give its CA with --ca FILE, or --insecure to accept any", c.endpoint, certErr.Err)
	case errors.As(err, &recErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("--endpoint %s: TLS handshake failed: the server does not speak TLS there; use http://", c.endpoint)
	case errors.As(err, &netErr):
		return fmt.Errorf("--endpoint %s: unreachable (%v)", c.endpoint, netErr.Err)
	case c.anonymous && (credentialCodes[resp.Code] || resp.StatusCode == http.StatusForbidden):
		return fmt.Errorf("%s refused an unsigned request (%s): no S3 credentials were found — looked in --access-key/--secret-key, "+
			"AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, MINIO_ACCESS_KEY/MINIO_SECRET_KEY and the shared credentials file "+
			"(AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials)", c.endpoint, serverSaid(err))
	case credentialCodes[resp.Code]:
		return fmt.Errorf("credentials rejected by %s (%s); check the keys (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or --access-key/--secret-key), "+
			"--region (the signing region) and --lookup path|dns", c.endpoint, serverSaid(err))
	case resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s refused the request (%s); check what the keys may do on --bucket, --region (the signing region) and --lookup path|dns",
			c.endpoint, serverSaid(err))
	}
	return fmt.Errorf("%s: %s", c.endpoint, serverSaid(err))
}

// credentialCodes are the S3 error codes of rejected credentials.
var credentialCodes = map[string]bool{"InvalidAccessKeyId": true, "SignatureDoesNotMatch": true, "AccessDenied": true,
	"InvalidClientTokenId": true, "InvalidToken": true, "ExpiredToken": true,
	"XAdminUserNotFound": true} // versitygw: unknown access key
