package store

import (
	"bytes"
	"cmp"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// dsnTarget names where a parsed DSN points, for errors and logs: its
// hosts and ports, database and user; never its password.
func dsnTarget(cfg *pgconn.Config) string {
	hosts := []string{hostPort(cfg.Host, cfg.Port)}
	for _, f := range cfg.Fallbacks {
		if hp := hostPort(f.Host, f.Port); !slices.Contains(hosts, hp) {
			hosts = append(hosts, hp)
		}
	}
	return strings.Join(hosts, ",") + " database " + strconv.Quote(cfg.Database) + " user " + strconv.Quote(cfg.User)
}

func hostPort(host string, port uint16) string {
	if strings.HasPrefix(host, "/") {
		return host // a Unix socket's directory
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// redactMask replaces a password in text.
const redactMask = "xxxxx"

// redact removes from text every string that dsn could hold as a password,
// in every spelling it might appear in (as written, percent-decoded,
// unquoted). pgx redacts its own parse errors on a best-effort basis, and
// the text of a URL error repeats the URL; errors that reach a log pass
// through here as well. It over-masks rather than miss: see dsnSecrets.
func redact(text, dsn string) string {
	secrets := dsnSecrets(dsn)
	// Longest first, so a secret that contains another is masked whole.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, s := range secrets {
		text = strings.ReplaceAll(text, s, redactMask)
	}
	return text
}

// dsnSecrets returns every string of dsn that a lenient reader could take
// for a password, with its decoded and re-escaped spellings:
//
//   - in a URL (postgres:// or postgresql://), every span of the user
//     information from a ":" to an "@" (unescaped, either may be part of
//     the user name or the password);
//   - every value of a password or sslpassword setting, in a URL's query
//     or among key=value pairs, quoted or not.
//
// An empty value gives nothing to mask; a one-letter password masks that
// letter everywhere, which garbles the text but keeps the secret.
func dsnSecrets(dsn string) []string {
	var out []string
	add := func(s string) {
		for _, v := range []string{s, queryDecoded(s), pathDecoded(s), unquoted(s)} {
			// Each reading, also as a URL would escape it again (a
			// library that prints the URL it parsed).
			for _, w := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
				if w != "" && !slices.Contains(out, w) {
					out = append(out, w)
				}
			}
		}
	}
	rest, isURL := strings.CutPrefix(dsn, "postgres://")
	if !isURL {
		rest, isURL = strings.CutPrefix(dsn, "postgresql://")
	}
	if isURL {
		// Unescaped, ":" and "@" may sit in a user name or a password as
		// well as between them: take every span from a ":" to an "@" of the
		// user information (which ends at the last "@").
		if end := strings.LastIndexByte(rest, '@'); end >= 0 {
			info := rest[:end+1]
			for i := range len(info) {
				if info[i] != ':' {
					continue
				}
				for j := i + 1; j < len(info); j++ {
					if info[j] == '@' {
						add(info[i+1 : j])
					}
				}
			}
		}
	}
	for _, name := range []string{"password", "sslpassword"} {
		for _, v := range settingValues(dsn, name) {
			add(v)
		}
	}
	return out
}

// settingValues returns the raw values of every name=value setting in s
// (a URL query or key=value pairs, the key in any case, spaces around "="
// allowed, percent-encoded or not): from after "=" to the next "&" or
// space, or, when quoted, to the closing quote (backslash escapes
// honoured), or to the end of s.
func settingValues(s, name string) []string {
	var out []string
	// ASCII only: strings.ToLower would change the length of invalid
	// UTF-8, and the indexes below are s's.
	lower := []byte(s)
	for i, c := range lower {
		if 'A' <= c && c <= 'Z' {
			lower[i] = c + 'a' - 'A'
		}
	}
	for i := 0; ; {
		j := bytes.Index(lower[i:], []byte(name))
		if j < 0 {
			return out
		}
		i += j + len(name)
		k := i
		for k < len(s) && s[k] == ' ' {
			k++
		}
		if k >= len(s) || s[k] != '=' {
			continue
		}
		k++
		for k < len(s) && s[k] == ' ' {
			k++
		}
		end := k
		if end < len(s) && s[end] == '\'' {
			end++
			for end < len(s) && s[end] != '\'' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			end = min(end+1, len(s))
		} else {
			for end < len(s) && s[end] != '&' && s[end] != ' ' {
				end++
			}
		}
		out = append(out, s[k:end])
		// Unquoted, a value also reads as running to the end of s (a
		// reader that does not split on spaces or "&").
		out = append(out, s[k:])
	}
}

// queryDecoded is s with its %XX escapes decoded and "+" read as a space,
// as in a query; s when it holds a malformed escape.
func queryDecoded(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// pathDecoded is s with its %XX escapes decoded, "+" kept, as in user
// information; s when it holds a malformed escape.
func pathDecoded(s string) string {
	if d, err := url.PathUnescape(s); err == nil {
		return d
	}
	return s
}

// unquoted is s without surrounding single quotes and with its backslash
// escapes resolved, as key=value pairs read a quoted value.
func unquoted(s string) string {
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return s
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		if s[i] == '\\' && i+1 < len(s)-1 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
