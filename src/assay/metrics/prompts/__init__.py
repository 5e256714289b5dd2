"""The judges' prompts: assay's own wording, asking for the verdicts ADK's judges give.

Each prompt is two messages. The system message holds the static instructions and the answer
format, identical for every invocation, so a prefix cache (llama.cpp's) reuses it; the user
message holds the invocation's inputs between tags. Each judge is asked for one JSON object, and
the request carries that object's JSON schema.
"""
