package rest

// CountRange returns the parameters of the first page of the scan's rows with IDs after after up
// to and including upTo, counting on (start 0): its answer's total is how many rows the range
// holds, the portal's own count of it, in one command. The range is the one a Segment of the
// same bounds walks, under the same filter operators (> and <=), so that the count and a
// listing again of the range see the same rows. over's keys replace the scan's parameters (a
// select of the ID alone, so that the page is small).
func (s Scan) CountRange(after, upTo string, over map[string]any) (map[string]any, error) {
	p, err := s.withFilter(over, map[string]any{">" + s.filterField(): after, "<=" + s.filterField(): upTo})
	if err != nil {
		return nil, err
	}
	p["start"] = 0
	return p, nil
}
