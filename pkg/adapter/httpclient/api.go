package httpclient

import (
	"context"
	"net/http"
	"net/url"
)

// API is one provider endpoint as an op uses it: the client, the base URL
// and the credential. The zero Token sends no Authorization header.
type API struct {
	Client   *Client
	Provider string
	BaseURL  string
	Token    string
	TokenVar string // the variable Token came from, named in auth failures' hints
	RawToken bool   // Token is the whole Authorization value, not a bearer token
	Header   http.Header
}

// Get reads path into out.
func (a API) Get(ctx context.Context, path string, q url.Values, out any) error {
	_, err := a.Client.JSON(ctx, a.request(http.MethodGet, path, q, nil, true), out)
	return err
}

// Send writes: method on path with a JSON body, decoding the answer into
// out (nil: ignored). idempotent declares a POST or PATCH safe to repeat.
func (a API) Send(ctx context.Context, method, path string, q url.Values, body any, idempotent bool, out any) error {
	_, err := a.Client.JSON(ctx, a.request(method, path, q, body, idempotent), out)
	return err
}

// Do sends any request and returns the raw answer.
func (a API) Do(ctx context.Context, method, path string, q url.Values, body any, idempotent bool) (*Response, error) {
	return a.Client.Do(ctx, a.request(method, path, q, body, idempotent))
}

func (a API) request(method, path string, q url.Values, body any, idempotent bool) *Request {
	return &Request{Provider: a.Provider, Method: method, BaseURL: a.BaseURL, Path: path, Query: q,
		Token: a.Token, TokenVar: a.TokenVar, RawToken: a.RawToken, Header: a.Header, Body: body, Idempotent: idempotent}
}
