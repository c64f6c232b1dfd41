package s
