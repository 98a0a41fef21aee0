%%q instruction | Which build tooling and frameworks am I allowed to use for the node firmware? | s01kick
%%q instruction | What compiler warning flags does any C code for the firmware have to pass? | s02warn
%%q fact | Which four sensors did the first node prototype carry? | s01kick
%%q assistant | What polynomial and initial value did you say the Sensirion CRC uses? | s01i2c
%%q assistant | Why did you recommend snprintf over cJSON for building the telemetry payload? | s03jsonA
%%q fact | What does Femke do at the company and what's her background with databases? | s04svc
%%q assistant | Which Go MQTT library did you recommend for the ingestion service, and why that one? | s04paho
%%q assistant | Why are reading fields pointers in the Go Reading struct? | s04skel
