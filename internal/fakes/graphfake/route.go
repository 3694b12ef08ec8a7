package graphfake

import (
	"net/url"
	"regexp"
	"strings"
)

// route answers one authorised request.
func (s *Server) route(parts []string, q url.Values, viewer *account, token string) (any, *apiError) {
	if len(parts) == 0 || parts[0] == "" || len(parts) > 2 {
		return nil, errBadRequest(100, 0, "(#100) Unknown path components")
	}
	fs, err := parseFields(q.Get("fields"))
	if err != nil {
		return nil, errBadRequest(100, 0, "(#100) Syntax error in fields: "+err.Error())
	}
	node, edge := parts[0], ""
	if len(parts) == 2 {
		edge = parts[1]
	}
	if node == "me" {
		node = viewer.id
	}
	v := view{token: token, rng: s.rng}
	path := strings.Join(parts, "/")
	if a := s.accountByID(node); a != nil {
		if a != viewer {
			return nil, errNoObject(node)
		}
		switch edge {
		case "":
			if bd, ok := discovery(fs); ok {
				return s.businessDiscovery(viewer, bd, v, path, q)
			}
			return s.renderUser(a, subOr(fs, "id", "username"), v, path, q)
		case "media":
			return s.mediaEdge(a, field{name: "media", sub: fs}, v, path, q)
		case "stories":
			return s.storiesEdge(a, fs, v)
		}
		return nil, errNoObject(node + "/" + edge)
	}
	if m := s.mediaByID(node); m != nil && !m.deleted {
		if m.owner != viewer {
			return nil, errNoObject(node)
		}
		switch edge {
		case "":
			return s.renderMedia(m, subOr(fs, "id"), v, path)
		case "comments":
			return s.commentsEdge(m, field{name: "comments", sub: fs}, v, path, q)
		case "children":
			data := []obj{}
			for _, c := range m.children {
				co, err := s.renderMedia(c, subOr(fs, "id"), v, path)
				if err != nil {
					return nil, err
				}
				data = append(data, co)
			}
			return obj{{"data", data}}, nil
		}
		return nil, errNoObject(node + "/" + edge)
	}
	if c := s.commentByID(node); c != nil && !c.media.deleted {
		if c.media.owner != viewer {
			return nil, errNoObject(node)
		}
		switch edge {
		case "":
			return s.renderComment(c, subOr(fs, "timestamp", "text", "id"), v, path)
		case "replies":
			return s.repliesEdge(c, field{name: "replies", sub: fs}, v, path, q)
		}
	}
	return nil, errNoObject(node)
}

var usernameRe = regexp.MustCompile(`^[A-Za-z0-9._]{1,30}$`)

// discovery finds the business_discovery field among fs.
func discovery(fs []field) (field, bool) {
	for _, f := range fs {
		if f.name == "business_discovery" {
			return f, true
		}
	}
	return field{}, false
}

// businessDiscovery answers GET /{viewer}?fields=business_discovery.username(U){...}: another
// professional account's public profile and media, through the viewer's token.
func (s *Server) businessDiscovery(viewer *account, bd field, v view, path string, q url.Values) (any, *apiError) {
	name := bd.mods["username"]
	if !usernameRe.MatchString(name) {
		return nil, errBadRequest(100, 0, "(#100) Param username must be a valid Instagram username")
	}
	target := s.accountByUsername(name)
	if target == nil || target.spec.AgeGated {
		return nil, errUserNotFound(name)
	}
	v.discovery = true
	inner, err := s.renderUser(target, subOr(bd.sub, "id"), v, path, q)
	if err != nil {
		return nil, err
	}
	return obj{{"business_discovery", inner}, {"id", viewer.id}}, nil
}
