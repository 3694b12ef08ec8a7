package rest

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/time/rate"
)

// Rate describes a portal's leaky bucket: each request adds one to a
// counter that drains by PerSecond every second, and the portal refuses
// requests (503 QUERY_LIMIT_EXCEEDED) while the counter is above Burst.
// Standard plans have 2/50, Enterprise 5/250.
type Rate struct {
	PerSecond float64
	Burst     int
}

// DefaultRate is the bucket of every plan below Enterprise.
func DefaultRate() Rate { return Rate{PerSecond: 2, Burst: 50} }

// ParseRate reads "drain/burst", the form of BITRIX_RATE: "2/50" or
// "5/250". A bare number is a drain rate with the standard burst of 50.
func ParseRate(s string) (Rate, error) {
	perSecond, burst, hasBurst := strings.Cut(strings.TrimSpace(s), "/")
	r := DefaultRate()
	var err error
	if r.PerSecond, err = strconv.ParseFloat(perSecond, 64); err != nil || r.PerSecond <= 0 {
		return Rate{}, fmt.Errorf("rate %q: want requests per second and burst, like 2/50", s)
	}
	if hasBurst {
		if r.Burst, err = strconv.Atoi(burst); err != nil || r.Burst < 1 {
			return Rate{}, fmt.Errorf("rate %q: burst must be a whole number of at least 1", s)
		}
	}
	return r, nil
}

// String formats the rate as ParseRate reads it.
func (r Rate) String() string {
	return strconv.FormatFloat(r.PerSecond, 'g', -1, 64) + "/" + strconv.Itoa(r.Burst)
}

// NewLimiter returns a token bucket in step with the portal's leaky bucket:
// tokens refill at the drain rate, and the bucket holds one request less
// than the portal's, so that our requests arriving a little bunched up (a
// slow first request, a fast second) cannot tip the portal's counter over
// its limit. Share the one limiter among every client of the process: the
// portal counts all requests from our address together.
func (r Rate) NewLimiter() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(r.PerSecond), max(1, r.Burst-1))
}
