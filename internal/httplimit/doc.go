// Package httplimit bounds what an HTTP answer can do to the program that asked for it: how
// many bytes it can make the program hold (counted after decompression and enforced while
// reading, so a gzip bomb costs at most the cap) and where a redirect can send a request that
// carries credentials (nowhere off the origin the client was configured with).
//
// It is its own package rather than part of internal/fetch because fetch's one job is reading
// Habr's pages (its origin mapping, charset conversion and error classes are Habr's), while
// every client of the program (the Bitrix24 portal, the target, the Graph API, the enrichment
// providers, the Pushgateway and fetch itself) needs these two limits.
package httplimit
