"""Host-side tools that are not part of the runtime (never in the browser wheel)."""
