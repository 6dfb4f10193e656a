package protocol

import (
	"unicode"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The people frames: a user's settings, blocks and presence (PROTOCOL.md,
// "People: presence, settings, names and blocking").

// The values of UserSettings.LastSeen.
const (
	LastSeenEveryone = "everyone"
	LastSeenNobody   = "nobody"
)

// Defaults of the people limits, as the contract gives them.
const (
	DefaultMaxPresenceUsers = 100  // users of one presence request
	DefaultMaxBlocked       = 1000 // users one user may block
	DefaultMaxName          = 64   // characters of a display name
)

// UserSettings is a user's whole set of settings, as answered and pushed.
type UserSettings struct {
	LastSeen     string   `json:"last_seen"`
	ReadReceipts bool     `json:"read_receipts"`
	Name         string   `json:"name"`
	Blocked      []string `json:"blocked"`
}

// DefaultSettings are a new user's settings.
func DefaultSettings() UserSettings {
	return UserSettings{LastSeen: LastSeenEveryone, ReadReceipts: true, Blocked: []string{}}
}

// HidesLastSeen reports whether the user chose last seen "nobody".
func (s UserSettings) HidesLastSeen() bool { return s.LastSeen == LastSeenNobody }

// SettingsChange is what a settings request changes: the keys it carries.
type SettingsChange struct {
	LastSeen     *string
	ReadReceipts *bool
	Name         *string
}

// Empty reports whether the change carries no key (a read).
func (c SettingsChange) Empty() bool {
	return c.LastSeen == nil && c.ReadReceipts == nil && c.Name == nil
}

// Apply returns s with the change's keys set.
func (c SettingsChange) Apply(s UserSettings) UserSettings {
	if c.LastSeen != nil {
		s.LastSeen = *c.LastSeen
	}
	if c.ReadReceipts != nil {
		s.ReadReceipts = *c.ReadReceipts
	}
	if c.Name != nil {
		s.Name = *c.Name
	}
	return s
}

// SettingsRequest reads the user's settings (without Settings) or changes
// the keys Settings carries.
type SettingsRequest struct {
	Ref
	Settings jsontext.Value `json:"settings,omitempty"`
}

// Change parses and validates the keys of the request: an unknown key, the
// read-only "blocked", or a bad value is invalid.
func (r *SettingsRequest) Change(maxName int) (SettingsChange, *Error) {
	var c SettingsChange
	if len(r.Settings) == 0 || r.Settings.Kind() == 'n' {
		return c, nil
	}
	if r.Settings.Kind() != '{' {
		return c, Errorf(CodeInvalid, "settings must be an object")
	}
	var keys map[string]jsontext.Value
	if err := jsonv2.Unmarshal(r.Settings, &keys); err != nil {
		return c, Errorf(CodeInvalid, "settings: %s", plainJSONError(err))
	}
	for key, v := range keys {
		switch key {
		case "last_seen":
			var s string
			if jsonv2.Unmarshal(v, &s) != nil || (s != LastSeenEveryone && s != LastSeenNobody) {
				return SettingsChange{}, Errorf(CodeInvalid, `last_seen must be "everyone" or "nobody"`)
			}
			c.LastSeen = &s
		case "read_receipts":
			var b bool
			if jsonv2.Unmarshal(v, &b) != nil {
				return SettingsChange{}, Errorf(CodeInvalid, "read_receipts must be a boolean")
			}
			c.ReadReceipts = &b
		case "name":
			var s string
			if jsonv2.Unmarshal(v, &s) != nil || !ValidName(s, maxName) {
				return SettingsChange{}, Errorf(CodeInvalid, "name must be at most %d characters of UTF-8 without control characters", maxName)
			}
			c.Name = &s
		case "blocked":
			return SettingsChange{}, Errorf(CodeInvalid, "blocked is read-only: use block and unblock")
		default:
			return SettingsChange{}, Errorf(CodeInvalid, "unknown setting %q", truncate(key, 40))
		}
	}
	return c, nil
}

// ValidName reports whether s is a display name: at most max characters of
// valid UTF-8 without control characters ("" is none).
func ValidName(s string, max int) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > max {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// SettingsReply answers a settings request (with its id) and is pushed,
// without id, to the user's other devices after a change.
type SettingsReply struct {
	Ref
	Settings UserSettings `json:"settings"`
}

// Block blocks a user.
type Block struct {
	Ref
	User string `json:"user"`
}

// Unblock lifts a block.
type Unblock struct {
	Ref
	User string `json:"user"`
}

// validBlockTarget checks the user of a block or unblock by user self.
func validBlockTarget(target, self string) *Error {
	if !ValidUser(target) {
		return Errorf(CodeInvalid, "user must be a user id")
	}
	if target == self {
		return Errorf(CodeInvalid, "a user cannot block itself")
	}
	return nil
}

// Validate checks a block by user self.
func (b *Block) Validate(self string) *Error { return validBlockTarget(b.User, self) }

// Validate checks an unblock by user self.
func (b *Unblock) Validate(self string) *Error { return validBlockTarget(b.User, self) }

// PresenceRequest asks for users' presence and makes them the
// connection's watch list.
type PresenceRequest struct {
	Ref
	Users []string `json:"users"`
}

// Validate checks the request against the limit of users.
func (p *PresenceRequest) Validate(maxUsers int) *Error {
	if len(p.Users) > maxUsers {
		return Errorf(CodeInvalid, "presence asks for at most %d users", maxUsers)
	}
	for _, u := range p.Users {
		if !ValidUser(u) {
			return Errorf(CodeInvalid, "users must be user ids")
		}
	}
	return nil
}

// Presence is one user's presence as another user may see it.
type Presence struct {
	User     string `json:"user"`
	Online   bool   `json:"online"`
	LastSeen int64  `json:"last_seen"`
	Name     string `json:"name"`
}

// Stranger is the answer for a user one may not see.
func Stranger(user string) Presence { return Presence{User: user} }

// PresenceReply answers a presence request (with its id), and is pushed
// without id while the users are watched.
type PresenceReply struct {
	Ref
	Users []Presence `json:"users"`
}

func (*SettingsRequest) FrameType() string { return "settings" }
func (*SettingsReply) FrameType() string   { return "settings" }
func (*Block) FrameType() string           { return "block" }
func (*Unblock) FrameType() string         { return "unblock" }
func (*PresenceRequest) FrameType() string { return "presence" }
func (*PresenceReply) FrameType() string   { return "presence" }
