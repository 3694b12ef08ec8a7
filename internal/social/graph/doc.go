// Package graph is a small client of the Instagram Graph API (Instagram Platform) for the
// social-sync pipeline: GET requests with field expansion, the error envelope classified by its
// JSON code rather than the HTTP status (throttling often comes as HTTP 400), the usage headers
// X-App-Usage and X-Business-Use-Case-Usage read on every response, and cursor paging where the
// end of a list is the absence of paging.next (or, for business_discovery, of the after
// cursor), never a short or empty page.
//
// Access tokens travel as the documented access_token query parameter and nowhere else: they
// are removed from every request string the client hands back, from every error it returns,
// and from the paging links inside response bodies before a body leaves the package.
package graph
