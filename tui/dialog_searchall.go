package tui

// chatName names conv as the list does, its id when the list lacks it.
func (m *Model) chatName(conv string) string {
	if s, ok := m.list.find(conv); ok {
		return m.com.chatTitle(&s)
	}
	return conv
}
