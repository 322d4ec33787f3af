package s3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/workload"
)

// client is a minio-go client whose transport pools one connection per
// worker and counts the connections it opens, so connection churn (a
// client that pools 2 connections for 128 requests and pays a TLS handshake
// for each) shows in the results.
type client struct {
	*minio.Client
	core   minio.Core
	dialed atomic.Int64
}

func newClient(o *Options) (*client, error) {
	u, err := url.Parse(o.Endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--endpoint %q: want http://host:port or https://host:port", o.Endpoint)
	}
	c := &client{}
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
		TLSClientConfig:       &tls.Config{InsecureSkipVerify: o.Insecure}, //nolint:gosec // only with --insecure
	}
	if !o.HTTP2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	if v, err := credentialsOf(o).GetWithContext(nil); err == nil {
		redact.Secret(v.AccessKeyID, v.SecretAccessKey, v.SessionToken)
	}
	lookup := map[string]minio.BucketLookupType{"auto": minio.BucketLookupAuto, "path": minio.BucketLookupPath, "dns": minio.BucketLookupDNS}[o.Lookup]
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentialsOf(o), Secure: u.Scheme == "https",
		Transport: tr, Region: o.Region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("--endpoint %s: %w", o.Endpoint, err)
	}
	c.Client, c.core = mc, minio.Core{Client: mc}
	return c, nil
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

// preflight says plainly, before any load, what is wrong with the endpoint,
// the credentials or the bucket.
func (c *client) preflight(ctx context.Context, o *Options) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	exists, err := c.BucketExists(ctx, o.Bucket)
	if err != nil {
		return &workload.InputError{Err: describe(o, err)}
	}
	if exists {
		return nil
	}
	// Some servers answer HEAD bucket with 404 also to wrong credentials;
	// a call that needs valid ones tells the two apart.
	if _, err := c.ListBuckets(ctx); err != nil {
		return &workload.InputError{Err: describe(o, err)}
	}
	if !o.CreateBucket {
		return &workload.InputError{Err: fmt.Errorf("--bucket %s does not exist at %s; create it, or add --create-bucket", o.Bucket, o.Endpoint)}
	}
	if err := c.MakeBucket(ctx, o.Bucket, minio.MakeBucketOptions{Region: o.Region}); err != nil {
		return &workload.InputError{Err: fmt.Errorf("--create-bucket %s: %w", o.Bucket, describe(o, err))}
	}
	return nil
}

// describe turns a client error into what the user must fix.
func describe(o *Options, err error) error {
	var netErr *net.OpError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	resp := minio.ToErrorResponse(err)
	switch {
	case errors.As(err, &certErr):
		return fmt.Errorf("--endpoint %s: TLS certificate not trusted (%v); add --insecure to accept it", o.Endpoint, certErr.Err)
	case errors.As(err, &recErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("--endpoint %s: TLS handshake failed: the server does not speak TLS there; use http://", o.Endpoint)
	case errors.As(err, &netErr):
		return fmt.Errorf("--endpoint %s: unreachable (%v)", o.Endpoint, netErr.Err)
	case credentialCodes[resp.Code] || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("credentials rejected by %s (%s); check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or --access-key/--secret-key", o.Endpoint, firstOf(resp.Code, strconv.Itoa(resp.StatusCode)))
	}
	return fmt.Errorf("%s: %w", o.Endpoint, err)
}

// credentialCodes are the S3 error codes of rejected credentials.
var credentialCodes = map[string]bool{"InvalidAccessKeyId": true, "SignatureDoesNotMatch": true, "AccessDenied": true,
	"InvalidClientTokenId": true, "InvalidToken": true, "ExpiredToken": true,
	"XAdminUserNotFound": true} // versitygw: unknown access key

// errorCode is how a failed operation is counted: the S3 error code, else
// the HTTP status, else "network".
func errorCode(err error) string {
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code != "":
		return resp.Code
	case resp.StatusCode != 0:
		return strconv.Itoa(resp.StatusCode)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "network"
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
