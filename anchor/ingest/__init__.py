"""Untrusted input from the network: archives decoded under hard bounds."""
