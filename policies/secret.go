package policies

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// ReadsAsSecret reports whether a field reads as a secret, so no form may
// ask for it (MCP: forms never request passwords, API keys, access tokens
// or payment credentials). It reads words, in any spelling: the key, title
// and description are split at separators, case changes and digits
// (api_key, apiKey, APIKey, api-key and "API key" all read "api key"),
// plurals are read as their singular, and the words are matched against:
//
//   - passwords and kin: password, passwd, pwd, passcode, passphrase, passkey,
//     pincode, PIN, OTP, TOTP, HOTP, "one time code", "2fa code", "mfa code",
//     "two factor code", verification/auth/authorization/access/security code,
//     backup and recovery codes, recovery/seed phrase, "security answer", and
//     password in a few languages (Passwort, Kennwort, contraseña, senha,
//     wachtwoord, "mot de passe");
//   - keys and tokens: secret, token, JWT, credential, API/access/private/
//     secret/signing/encryption/SSH/recovery key (also written as one word);
//   - payment credentials: card number, credit/debit card, "cc number",
//     CVV, CVC, CSC, "card verification", IBAN, bank account,
//     routing number, sort code.
//
// A key also reads as a secret when it matches one of forbidden in any
// spelling (internal_ref matches internalRef and internal-ref).
//
// The check reads words, not meaning, so it has known false positives that
// are fixed by renaming the field: pin_to_top (a PIN; call it pinned),
// max_tokens or a description "number of tokens" (a token; call it
// max_length), "do not enter a password here". Words that only contain a
// secret word are not secrets: tokenizer_mode, pinned, spinner, secretary,
// passport, keyboard. A social security or tax number is personal data, not
// a secret credential, and is not caught.
func ReadsAsSecret(key, title, description string, forbidden []string) bool {
	if len(forbidden) > 0 {
		k := strings.Join(splitWords(key), "_")
		for _, f := range forbidden {
			if k != "" && k == strings.Join(splitWords(f), "_") {
				return true
			}
		}
	}
	for _, s := range [...]string{key, title, description} {
		if hasSecretWords(splitWords(s)) {
			return true
		}
	}
	return false
}

// secretPhrases are the word sequences that read as a secret, in lower case
// and singular.
var secretPhrases = [][]string{
	{"password"}, {"passwd"}, {"pwd"}, {"passcode"}, {"passphrase"}, {"passkey"},
	{"pincode"}, {"pin"}, {"otp"}, {"totp"}, {"hotp"},
	{"passwort"}, {"kennwort"}, {"contraseña"}, {"contrasena"}, {"senha"}, {"wachtwoord"},
	{"mot", "de", "passe"},
	{"secret"}, {"secretkey"}, {"token"}, {"jwt"}, {"credential"},
	{"apikey"}, {"accesskey"}, {"privatekey"},
	{"api", "key"}, {"access", "key"}, {"private", "key"}, {"signing", "key"},
	{"encryption", "key"}, {"ssh", "key"}, {"recovery", "key"},
	{"one", "time", "code"}, {"2", "fa", "code"}, {"mfa", "code"}, {"two", "factor", "code"},
	{"verification", "code"}, {"auth", "code"}, {"authorization", "code"},
	{"access", "code"}, {"security", "code"}, {"backup", "code"}, {"recovery", "code"},
	{"recovery", "phrase"}, {"seed", "phrase"}, {"security", "answer"},
	{"card", "number"}, {"credit", "card"}, {"debit", "card"},
	{"cc", "number"}, {"cvv"}, {"cvc"}, {"csc"}, {"card", "verification"},
	{"iban"}, {"bank", "account"}, {"routing", "number"}, {"sort", "code"},
}

// hasSecretWords reports whether words (from splitWords) hold a secret phrase.
func hasSecretWords(words []string) bool {
	for i := range words {
		words[i] = singular(words[i])
	}
	for i := range words {
		for _, p := range secretPhrases {
			if i+len(p) > len(words) {
				continue
			}
			match := true
			for j, w := range p {
				if words[i+j] != w {
					match = false
					break
				}
			}
			if match {
				return true
			}
		}
	}
	return false
}

// singular drops a plural s: tokens → token, pins → pin, but pass and
// status keep theirs (status reads statu, which matches nothing).
func singular(w string) string {
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		return w[:len(w)-1]
	}
	return w
}

// splitWords splits s into lower-case words at anything that is not a
// letter or digit, at a change from lower to upper case (apiKey), before the
// last capital of a run followed by a small letter (APIKey → API Key, but
// userIDs → user IDs), and between letters and digits (cvv2 → cvv 2).
func splitWords(s string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	runes := []rune(s)
	for i, r := range runes {
		if r == utf8.RuneError || !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 {
			prev := cur[len(cur)-1]
			switch {
			case unicode.IsDigit(prev) != unicode.IsDigit(r):
				flush()
			case unicode.IsLower(prev) && unicode.IsUpper(r):
				flush()
			case unicode.IsUpper(prev) && unicode.IsUpper(r) && startsWord(runes, i):
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// startsWord reports whether the capital at runes[i], after another
// capital, starts a new word: a small letter follows, other than a plural
// s ending the word (IDs).
func startsWord(runes []rune, i int) bool {
	if i+1 >= len(runes) || !unicode.IsLower(runes[i+1]) {
		return false
	}
	plural := runes[i+1] == 's' && (i+2 == len(runes) || !unicode.IsLetter(runes[i+2]))
	return !plural
}
