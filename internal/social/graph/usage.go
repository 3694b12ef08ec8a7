package graph

import (
	"encoding/json"
	"net/http"
	"time"
)

// Usage is what the platform said about the caller's rate limits on one response. The headers
// appear only once enough calls were made: their absence is not headroom, only "not told".
type Usage struct {
	// App is X-App-Usage: percentages of the app's limit (call_count, total_cputime,
	// total_time); nil when absent.
	App map[string]float64 `json:"app,omitempty"`
	// Business is X-Business-Use-Case-Usage: per business object id, one entry per use case.
	Business map[string][]BusinessUsage `json:"business,omitempty"`
}

// BusinessUsage is one entry of X-Business-Use-Case-Usage.
type BusinessUsage struct {
	Type         string  `json:"type"`
	CallCount    float64 `json:"call_count"`
	TotalCPUTime float64 `json:"total_cputime"`
	TotalTime    float64 `json:"total_time"`
	// RegainMinutes is estimated_time_to_regain_access: minutes until calls are no longer
	// throttled.
	RegainMinutes float64 `json:"estimated_time_to_regain_access"`
}

// ParseUsage reads the usage headers of a response; malformed values are ignored (a header
// the client cannot read must not fail a page it can).
func ParseUsage(h http.Header) Usage {
	var u Usage
	if v := h.Get("X-App-Usage"); v != "" {
		var app map[string]float64
		if json.Unmarshal([]byte(v), &app) == nil {
			u.App = app
		}
	}
	if v := h.Get("X-Business-Use-Case-Usage"); v != "" {
		var b map[string][]BusinessUsage
		if json.Unmarshal([]byte(v), &b) == nil {
			u.Business = b
		}
	}
	return u
}

// AppPercent is the highest percentage of X-App-Usage (0 when absent).
func (u Usage) AppPercent() float64 {
	var m float64
	for _, v := range u.App {
		m = max(m, v)
	}
	return m
}

// BusinessPercent is the highest percentage of X-Business-Use-Case-Usage (0 when absent).
func (u Usage) BusinessPercent() float64 {
	var m float64
	for _, list := range u.Business {
		for _, b := range list {
			m = max(m, b.CallCount, b.TotalCPUTime, b.TotalTime)
		}
	}
	return m
}

// RegainAfter is the longest estimated_time_to_regain_access of the business usage.
func (u Usage) RegainAfter() time.Duration {
	var m float64
	for _, list := range u.Business {
		for _, b := range list {
			m = max(m, b.RegainMinutes)
		}
	}
	return time.Duration(m * float64(time.Minute))
}

// Known reports whether the response carried any usage header.
func (u Usage) Known() bool { return u.App != nil || u.Business != nil }
