package forms

import "testing"

func TestSecret(t *testing.T) {
	secrets := []struct{ key, title, description string }{
		{"password", "", ""},
		{"Password", "", ""},
		{"passwords", "", ""},
		{"new_password", "", ""},
		{"currentPassword", "", ""},
		{"passwd", "", ""},
		{"passcode", "", ""},
		{"passphrase", "", ""},
		{"secret", "", ""},
		{"client_secret", "", ""},
		{"clientSecrets", "", ""},
		{"token", "", ""},
		{"access_token", "", ""},
		{"refreshToken", "", ""},
		{"api_key", "", ""},
		{"apiKey", "", ""},
		{"APIKey", "", ""},
		{"api-key", "", ""},
		{"API_KEYS", "", ""},
		{"apikey", "", ""},
		{"access_key", "", ""},
		{"AWSAccessKey", "", ""},
		{"private_key", "", ""},
		{"pin", "", ""},
		{"PIN", "", ""},
		{"pins", "", ""},
		{"pin_code", "", ""},
		{"otp", "", ""},
		{"otpCode", "", ""},
		{"totp", "", ""},
		{"verification_code", "", ""},
		{"verificationCodes", "", ""},
		{"backup_codes", "", ""},
		{"recovery_code", "", ""},
		{"recovery_phrase", "", ""},
		{"seedPhrase", "", ""},
		{"card_number", "", ""},
		{"cardNumber", "", ""},
		{"credit_card", "", ""},
		{"cvv", "", ""},
		{"CVV2", "", ""},
		{"cvc", "", ""},
		{"iban", "", ""},
		{"IBAN", "", ""},
		{"bank_account_number", "", ""},
		{"routing_number", "", ""},
		{"sort_code", "", ""},
		{"mfa_code", "", ""},
		{"2fa_code", "", ""},
		{"credentials", "", ""},
		{"jwt", "", ""},
		{"security_answer", "", ""},
		{"kennwort", "", ""},
		{"x", "API key", ""},
		{"x", "Your PIN", ""},
		{"x", "Mot de passe", ""},
		{"x", "", "The user's password."},
		{"x", "", "One-time code sent by SMS"},
		{"x", "", "Paste the access token here"},
		{"internal_ref", "", ""}, // forbidden
		{"internalRef", "", ""},  // forbidden, other spelling
		{"INTERNAL-REF", "", ""}, // forbidden, other spelling
		// Known false positives: the check reads words. Rename the field
		// (pinned, max_length) instead.
		{"pin_to_top", "", ""},
		{"max_tokens", "", ""},
	}
	forbidden := []string{"internal_ref"}
	for _, s := range secrets {
		if !Secret(s.key, s.title, s.description, forbidden) {
			t.Errorf("Secret(%q, %q, %q) = false; want true", s.key, s.title, s.description)
		}
	}
	plain := []struct{ key, title, description string }{
		{"title", "Title", "The post's title."},
		{"tokenizer_mode", "", ""},
		{"pinned", "Pinned", ""},
		{"spinner", "", ""},
		{"secretary", "", ""},
		{"passport_country", "", ""},
		{"keyboard_layout", "", ""},
		{"author", "", ""},
		{"opinion", "", ""},
		{"sort_key", "", ""},
		{"key", "", ""},
		{"code", "", ""},
		{"country_code", "", ""},
		{"card_title", "", ""},
		{"status", "", ""},
		{"pass", "", ""},
		{"internal", "", ""},
		{"email", "Email", "Where we write to you."},
		{"", "", ""},
	}
	for _, s := range plain {
		if Secret(s.key, s.title, s.description, forbidden) {
			t.Errorf("Secret(%q, %q, %q) = true; want false", s.key, s.title, s.description)
		}
	}
}
