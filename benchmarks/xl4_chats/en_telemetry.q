%%q instruction | Which build tooling and frameworks am I allowed to use for the node firmware? | s01kick
%%q instruction | What compiler warning flags does any C code for the firmware have to pass? | s02warn
%%q fact | Which four sensors did the first node prototype carry? | s01kick
%%q assistant | What polynomial and initial value did you say the Sensirion CRC uses? | s01i2c
%%q assistant | Why did you recommend snprintf over cJSON for building the telemetry payload? | s03jsonA
%%q fact | What does Femke do at the company and what's her background with databases? | s04svc
%%q assistant | Which Go MQTT library did you recommend for the ingestion service, and why that one? | s04paho
%%q assistant | Why are reading fields pointers in the Go Reading struct? | s04skel
%%q instruction | How does the user want long answers structured? | s05tldr
%%q instruction | What shell syntax should shell commands I give the user use? | s06fish
%%q assistant | Roughly how long did you estimate two AA lithiums would last with 30-second sampling on a proper board? | s05powA
%%q assistant | Where did the 4.5 seconds of Wi-Fi connect time go, according to your breakdown? | s06fast
%%q fact | How fast did the node get to a connected MQTT session after the channel/BSSID cache and cached lease? | s06log
%%q assistant | What formula did you give for VPD? | s07vpd
%%q preference | Which PCB design tool does the user use and which ones should I not suggest? | s08revb
%%q assistant | Why did you advise against the AP2112K regulator on rev B? | s08revbA
%%q fact | Which LDO did the user pick for rev B in the end? | s08ldoA s08rt
%%q fact | Who receives the Grafana Telegram alerts? | s07alert
%%q instruction | Can I suggest AWS IoT Core or a similar managed IoT platform for the device fleet? | s09ota
%%q assistant | When exactly does a freshly OTA-updated node mark its image as valid? | s09otaA
%%q assistant | What size did you give each OTA app slot in the 8 MB partition table? | s09otaA
%%q fact | Where is the firmware signing private key kept? | s09sig s09sigA
%%q fact | Who is the pilot customer, what do they grow, and who is their contact? | s10pilot
%%q preference | How does the user want services deployed on the server — any orchestration they refuse to use? | s10compose
%%q instruction | What commit message convention should suggested commits follow? | s11ravi
%%q fact | Who is Ravi and how long was his contract supposed to run? | s11ravi
%%q fact | What does each glasshouse at the pilot site use for Wi-Fi? | s10wifi
%%q assistant | What caused the brownout resets on the rev B boards? | s12brownA s12cap
%%q assistant | How did you say a +2 °C temperature error on the SHT40 affects humidity readings and alerts? | s12sht
%%q assistant | What did you suggest should happen when a node has failed to connect on several wakes in a row? | s13retryA
%%q assistant | How big is the RTC ring buffer for unsent samples, and how did you say the node should flush it? | s13retryA s13flushA
%%q fact | What was Ravi's argument for moving to TimescaleDB before the pilot, and who opposed it? | s14ts
%%q fact | Where did node metadata like placements and calibration offsets live during the pilot? | s14tsA s14dec
%%q assistant | Which way of bringing Rust into the firmware did you recommend as the first step? | s15rustA
%%q instruction | How should timestamps be stored across the system? | s16utc
%%q assistant | How did you propose correcting node clocks without an extra SNTP round trip every wake? | s16utcA
%%q fact | What went wrong on rev B that forced the B2 respin? | s17slip
%%q fact | How are Wi-Fi credentials and site config put onto pilot nodes? | s18bake s18provA
%%q preference | Is Python acceptable in this project, and where? | s18bake
%%q assistant | Why did you call SoftAP provisioning the worst option in a greenhouse? | s18provA
%%q assistant | How does the broker ACL stop one node from publishing as another? | s19tlsA
%%q fact | Why did the first TLS connections from the B1 boards fail? | s19err s19errA
%%q instruction | What should I always include when suggesting a change to the node firmware? | s20int
%%q assistant | What share of a node's energy per wake did you attribute to the SCD41 in the 60-second budget? | s20intA
%%q assistant | Why did you recommend keeping the SCD41 powered between measurements instead of switching it off? | s20co2A
%%q fact | What caused the watchdog panic in the coredump from March, and what was changed? | s21panicA s21panic
%%q fact | What task watchdog timeout does the sampling task use, and how does it coexist with the 5-second CO2 measurement? | s21wdt s21wdtA
%%q assistant | What three screens did you suggest building first in the grower UI, and with which frontend stack? | s22uiA
%%q fact | Why did Femke want an own web UI instead of Grafana? | s22ui
%%q fact | What sleep current did the B2 board measure with the SCD41 switched off, and what is the floor with it powered? | s23b2 s23ppk
%%q assistant | What was wrong with Ravi's batch writer? | s23revA
%%q assistant | What is the node's daily energy budget at 60-second wakes with CO2 every second wake, broken down? | s23ppk
%%q fact | How much disk does Influx grow per day for 40 nodes in the load test? | s24load
%%q assistant | Why must the SCD41's automatic self-calibration be disabled in a greenhouse? | s25calA
%%q instruction | How should SQL keywords be written? | s25sql
%%q fact | Which reference instruments were used to calibrate the nodes before install, and where did they come from? | s25cal
%%q assistant | What time difference did you give between Ravi and the user, and how does it change in winter? | s26runA
%%q fact | What climate computer brand does the pilot grower use in his houses? | s26priva s26runA
%%q contradiction | How many glasshouses does the pilot grower have? The numbers I have don't agree. | s10pilot s27inst
%%q fact | Why did one node report 0 lux after install? | s27film
%%q assistant | What did you tell the user to ask Jan's IT person about when adding the extra access point? | s27instA
%%q contradiction | Which Sensirion humidity sensor is on the B2 board — SHT40 or SHT45? | s02sht s28cond s23b2
%%q assistant | Under what conditions does the firmware fire the humidity sensor's heater, and what happens to the readings afterwards? | s28condA
%%q assistant | What did you recommend to make OTA downloads survive a dropped connection? | s28otaA
%%q fact | When did Ravi's contract actually end, and why early? | s29ravi
%%q event_order | Which came first: the decision to move readings to TimescaleDB or the topic scheme change to glasshaus/v1? | s29go s30final
%%q update | What's the current MQTT topic scheme for node telemetry? | s03topic s30final
%%q assistant | How does the Timescale schema keep QoS 1 duplicate messages from creating duplicate rows? | s29goA
%%q fact | Why did the user insist on having the house in the MQTT topic? | s30house
%%q assistant | What order of steps did you give for migrating nodes to the new topics without a flag day? | s30topicA
%%q assistant | What continuous aggregates and retention policies did you set up on Timescale? | s32retA
%%q fact | When does Grafana read from the 5-minute aggregate instead of raw readings? | s32ret
%%q assistant | Why was the backup script written in bash even though the user uses fish? | s32bkA
%%q fact | How often is the database restore tested? | s32bk s32bkA
%%q update | What's the current limit on connection attempts per wake and the backoff cap? | s13retryA s33statA s33ok
%%q fact | What share of wakes succeeded on the first connection attempt in the first three weeks of field data? | s33stat
%%q fact | What are the battery thresholds for the battery-aware sampling interval? | s33ap
%%q fact | Where did Ravi go after his contract? | s33handover
%%q update | Where does the user live now? | s06log s29ravi s34move
%%q fact | How much was the seed round? | s34move
%%q preference | What does the user think of ORMs, and what does he use for database access in Go? | s34sqlc
%%q assistant | How does the HouseStates query decide which node is the "worst" in a house? | s34sqlcA
%%q update | What payload format do nodes use now, and how often do they publish? | s03topicA s11raviA s35cbor
%%q contradiction | Did the team stick with JSON payloads as decided with Ravi? | s11raviA s35cbor
%%q assistant | How much did you estimate batching five samples into one publish would save per day? | s35batchA
%%q assistant | How does the ingestion service tell v1 JSON payloads from v2 CBOR ones during the rollout? | s35batchA
%%q update | What are the current alert thresholds for humidity and CO2? | s07alert s36alert
%%q fact | Who gets the node-offline alerts? | s36alert
%%q fact | When is the broker's TLS certificate due to expire? | s36leave
%%q fact | What is the user's daughter's name and when was she born? | s37back
%%q instruction | How long should my answers be for the weeks after the user came back from leave, and when is the exception? | s37back s38revc
%%q fact | When was the extra access point for kas 3 finally installed, and what did it do to the corner nodes' signal? | s37status
%%q fact | Which chart library did Lena use for the house detail graphs, and why? | s37lenaA s37uplot
%%q assistant | What did you say is the main power benefit of the ESP32-C6 for this node, given the access points don't support Wi-Fi 6? | s38revcA
%%q update | Which GPIOs is the I2C sensor bus on for the current hardware revision? | s02pins s08revb s38go
%%q fact | Which module variant did rev C move to, and why? | s38go
%%q fact | Who runs the second pilot site, what do they grow, and how many nodes go there? | s39orch
%%q fact | Why does the user speak some German? | s39orch
%%q assistant | Why doesn't row-level security on the readings table protect the continuous aggregates, and what did you propose instead? | s39orchA
%%q assistant | Where is local time legitimately used in queries despite the UTC rule? | s39rls
%%q update | Is the user vegetarian? | s11veg s40dinner
%%q assistant | How did you suggest the demo nodes at GreenTech get a correct clock without internet? | s40gtA
%%q fact | How are demo nodes configured differently from field nodes without a separate firmware build? | s40dinnerA s40ntp
%%q contradiction | Does the user work on the frontend code? | s22nofe s41retro
%%q update | What's the plan for the grower-facing UI now — own charts or Grafana? | s22uiA s22nofe s41retro s41lena
%%q assistant | Which method did you recommend for embedding per-customer Grafana dashboards in the grower app, and why not anonymous access? | s41retroA
%%q assistant | Which Rust target and crates did you propose for the manifest parser, and how is it limited to the C6 build? | s42rustA
%%q fact | What happened at GreenTech Amsterdam in terms of leads? | s41retro
%%q fact | Why is the soil moisture channel disabled on the Bloemhof nodes? | s43bloem s43bloemA s43dec
%%q fact | How does Dieter want temperatures displayed, and where was that handled? | s43bloem s43dec
%%q contradiction | Have readings in the database actually been stored in UTC? | s16utc s44tz
%%q assistant | Why did you say it was important to fix the timestamp column before the end of October? | s44tzA
%%q summary | Summarise the timestamp bug found in June: what was wrong, why, and how it was fixed. | s44tz s44tzA s44fixed s44fixedA
%%q assistant | What did you say about the broker licence and resource footprint when comparing EMQX with Mosquitto? | s45emqxA
%%q preference | When two tools are close, which kind does the user prefer? | s45pref
%%q fact | Which light sensor does rev C use and why was the old one dropped? | s46revc
%%q contradiction | What capacity are the 18650 cells in the nodes? | s08revb s46revc
%%q fact | What was taking up most of the extra 180 KB from the Rust library? | s46bloat
%%q assistant | Why was the rev C battery voltage reading about 140 mV off? | s46revcA
%%q update | Which parts of the firmware are written in Rust now? | s42ok s47dec
%%q summary | Summarise how the Rust experiment in the firmware went, from first idea to where it stands. | s15rustA s15later s42rust s46revc s46bloat s47size s47dec
%%q fact | What bug did fuzzing uncover in the old C manifest parser? | s47size
%%q fact | Which CI system does the firmware use, and how long does a build take after the caching changes? | s47ci s47size
%%q assistant | What caused 0.9.1 to roll back on two canary nodes, and what did you say every new NVS key needs? | s48canaryA s48canary
%%q assistant | How are nodes assigned to rollout cohorts so that each stage includes the previous one? | s48canaryA
%%q fact | What is the OTA rollout tool called and why is it separate from the ingestion binary? | s48toolA s48tool
%%q update | Where is the Glasshaus office, and how does the user get there? | s01kick s05tldr s34move s49office
%%q fact | Who is Youssef and when does he start? | s49office
%%q preference | Where does the user want documentation like onboarding notes kept? | s49office
%%q update | Until when does Lena's contract run now? | s34move s49office
%%q fact | Why did the team choose Wi-Fi access points over LoRaWAN for the Belgian cucumber pilot? | s50beA s50aps
%%q update | When is the Lambrecht pilot install and how many nodes of which revision? | s50be s50date
%%q assistant | When does the LP core wake the main processor in the rev C sampling design? | s51lpA
%%q fact | Why did the LP I2C reads get NACKs at first and how was it fixed? | s51nackA s51nack
%%q update | How often is CO2 measured on the nodes now? | s20co2 s51co2 s51co2A
%%q fact | What average current did the rev C node draw after moving sampling to the LP core, versus before? | s51meas
%%q fact | How much does the SCD41 draw idle on rev C? | s51co2A
%%q assistant | Why did the embedded Grafana show a login page in Safari, and what fixed it? | s52jwtA s52ok
%%q fact | How long do the JWTs for the embedded Grafana live? | s52ttlA s52ttl
%%q fact | How do growers pick date ranges when Grafana runs in kiosk mode? | s52kioskA s52picker
%%q assistant | What's the per-node cost of a rev C node, and which part dominates it? | s53bomA
%%q update | Which battery cells go into the newest nodes? | s08revb s53bom s53note
%%q fact | How many rev C boards were ordered and when are they expected? | s53order
%%q update | How long is raw minute-level data kept in the database now? | s32ret s32retA s54ret s54season
%%q assistant | What did you warn would be lost when recreating the 5-minute aggregate, and how was it preserved? | s54tmax s54arch
%%q assistant | What lux-to-PPFD factor did you suggest for sunlight when computing daily light integral? | s54dliA
%%q fact | What PAR calibration factors did Jan measure per house? | s56dli
%%q fact | Why did the dynsec ACL commands fail at first? | s55ver s55err
%%q preference | What is the rule for container image tags? | s55pin
%%q fact | What OS and editor does the user work with? | s55fedora
%%q fact | How accurate is the battery voltage reading on rev C after the two-point calibration? | s56ok
%%q fact | How is the daily low-DLI warning for Jan delivered? | s56alert s56alertA
%%q preference | Which bench supply does the user calibrate rev C boards with? | s56cal
