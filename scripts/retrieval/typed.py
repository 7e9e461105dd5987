"""Question types in the style of LongMemEval: long generated chat histories, and
questions labelled by type with their evidence known at the session and turn level.

    python scripts/retrieval/typed.py OUT_DIR [--seed 0] [--histories 4] [--sessions 60]
    # the histories (one folder each, a memory store each) and OUT_DIR/questions.jsonl

Each history is one person's year of Claude Code sessions (one file a session, several
turns each). Their personal details, preferences, changes and dated doings are said in
passing, in the user's turns, among much that shares their words: other people's dogs
and weddings, cities visited for other reasons, recipes for others, coding chatter. A
question is asked after the history's last session (``as_of``), in other words than
the ones that said it; its type says what answering takes:

* single-session: one detail said once ("I adopted a beagle named Biscuit" / "what's my
  dog called?");
* multi-session: evidence spread over two to four sessions ("which cities did I travel to
  for work?");
* preference: a preference said in passing, asked as a request for a recommendation
  ("I'm vegetarian" / "can you suggest a dinner recipe for me?");
* knowledge-update: a value that changed; the evidence is what states the latest value
  (the change, and any later restatement), not the earlier sessions that state the old;
* temporal-reasoning: the answer takes dates: days since an event, which of two came
  first, what happened two weeks (or last month) before the asking time, the latest or
  earliest of several alike.

A question: ``{"history", "question", "type", "kind", "as_of", "answer": [words, any of
which an evidence session holds], "evidence": [relative session file, ...],
"evidence_turns": [[relative session file, position of the user turn], ...]}``; paths
are relative to the history's folder. Every choice comes from one seeded
``random.Random``: the same seed writes the same files and questions.
"""

from __future__ import annotations

import argparse
import calendar
import json
import random
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

try:
    from . import corpus
except ImportError:  # run as a script: scripts/ on the path, as for bench.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from retrieval import corpus

TYPES = ("single-session", "multi-session", "preference", "knowledge-update", "temporal-reasoning")
PER_TYPE = 11  # questions of each type in each history
FIRST_DAY = datetime(2024, 1, 8, tzinfo=UTC)
SPAN_DAYS = 360  # a history's sessions fall on distinct days of this span

Said = tuple[tuple[str, str], ...]  # (user, assistant) templates

POOLS: dict[str, tuple[str, ...]] = {
    "pet": ("Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Otis", "Clementine", "Ziggy", "Pickles", "Hazel",
            "Bruno", "Nutmeg"),
    "breed": ("beagle", "corgi", "border collie", "dachshund", "labrador", "whippet", "shiba inu", "greyhound"),
    "city": ("Porto", "Lisbon", "Seville", "Krakow", "Ljubljana", "Edinburgh", "Bologna", "Ghent", "Tallinn",
             "Valencia", "Lyon", "Vienna", "Copenhagen", "Prague", "Bilbao", "Galway", "Bergen", "Rotterdam",
             "Zurich", "Munich", "Antwerp", "Gothenburg", "Marseille", "Dublin"),
    "town": ("Whitby", "Tavira", "Honfleur", "Cascais", "Stonehaven", "Ericeira", "Hoorn", "Sopot", "Piran",
             "Kinsale"),
    "car": ("Mazda 3", "Skoda Octavia", "Honda Jazz", "Toyota Yaris", "Volvo V60", "Kia Niro", "Renault Clio",
            "Subaru Outback"),
    "instrument": ("cello", "ukulele", "banjo", "saxophone", "violin", "mandolin", "clarinet", "trumpet"),
    "name": ("Priya", "Marco", "Dana", "Tomasz", "Aisha", "Kenji", "Lucia", "Omar", "Ingrid", "Ravi", "Elena",
             "Jonas", "Yuki", "Felix", "Maeve", "Tariq", "Sofia", "Hugo"),
    "kid": ("Leo", "Noah", "Arlo", "Finn", "Theo", "Milo", "Oscar", "Ezra"),
    "job": ("nurse", "paramedic", "air traffic controller", "pastry chef", "firefighter", "hotel night manager",
            "vet", "pilot"),
    "allergen": ("penicillin", "shellfish", "peanuts", "kiwi", "bee stings", "latex", "sesame"),
    "school": ("Riverside Primary", "Oakfield Academy", "St. Brendan's", "Hillcrest Elementary", "Northgate School",
               "Larkspur Montessori"),
    "bday": ("March 3rd", "July 19th", "October 8th", "December 2nd", "May 27th", "January 14th", "August 30th"),
    "degree": ("marine biology", "philosophy", "civil engineering", "art history", "chemistry", "linguistics",
               "economics"),
    "phone": ("Pixel 7", "iPhone 13 mini", "Fairphone 4", "Galaxy S22", "Nothing Phone"),
    "book": ("Piranesi", "The Overstory", "Klara and the Sun", "Project Hail Mary", "Tomorrow, and Tomorrow, and "
             "Tomorrow", "The Remains of the Day", "Station Eleven", "Circe", "A Gentleman in Moscow",
             "The Left Hand of Darkness", "Pachinko", "Middlemarch"),
    "rel": ("mum", "dad", "brother", "sister", "grandma", "uncle", "aunt"),
    "gift": ("cast-iron skillet", "weighted blanket", "bird feeder", "pasta maker", "e-reader", "wool scarf",
             "espresso grinder", "jigsaw puzzle"),
    "course": ("Spanish for beginners", "data visualisation", "watercolour painting", "public speaking", "UX design",
               "personal finance", "digital photography"),
    "repair": ("leaking kitchen tap", "squeaky bedroom door", "running toilet", "cracked bathroom tile",
               "wobbly bannister", "dripping shower head", "stuck sash window"),
    "lang": ("Rust", "Go", "Elixir", "Zig", "Kotlin", "OCaml", "Haskell"),
    "restaurant": ("Casa Lume", "Noodle Theory", "The Copper Pot", "Bar Alfama", "Sora Izakaya", "Little Lebanon",
                   "Fig & Fennel", "Tasca do Rio"),
    "race": ("Harbour 10k", "Autumn Half Marathon", "Parkside 5k", "Ridge Trail 30k", "City Night Run",
             "Riverside Relay"),
    "podcast": ("Hardcore History", "Search Engine", "99% Invisible", "Radiolab", "Cautionary Tales",
                "The Rest Is History", "Decoder"),
    "plant": ("monstera", "fiddle-leaf fig", "snake plant", "pothos", "calathea", "rubber plant", "string of pearls"),
    "app": ("Strava", "Runkeeper", "Nike Run Club", "Garmin Connect", "Runna", "MapMyRun"),
    "part": ("saddle", "chain", "set of tyres", "cassette", "pair of pedals", "rear light", "handlebar tape"),
    "amount": ("$35", "$48", "$60", "$85", "$120", "$140", "$210"),
    "company": ("Northwind", "Brightline", "Helix Labs", "Quarry", "Tidepool", "Lumen Health", "Foxglove",
                "Sparrow Logistics"),
    "db": ("MySQL", "Postgres", "MongoDB", "DynamoDB", "CockroachDB", "MariaDB", "SQL Server"),
    "framework": ("Angular", "React", "Vue", "Svelte", "Ember"),
    "provider": ("Vodafone", "Sky", "BT", "Virgin Media", "Hyperoptic", "TalkTalk"),
    "band": ("The National", "Khruangbin", "Big Thief", "Fontaines D.C.", "Phoenix", "Wet Leg", "Parcels", "Bon Iver",
             "Alvvays", "Japanese Breakfast"),
    "museum": ("Design Museum", "Natural History Museum", "Museum of Illusions", "Maritime Museum", "Science Museum",
               "Photography Museum", "Railway Museum"),
    "film": ("Past Lives", "Perfect Days", "Dune: Part Two", "Anatomy of a Fall", "Poor Things", "The Holdovers",
             "Aftersun", "Godzilla Minus One"),
    "peak": ("Ben Lomond", "Snowdon", "Pen y Fan", "Helvellyn", "Scafell Pike", "Catbells", "Mam Tor", "Ben Nevis"),
    "venue": ("Roundhouse", "Academy", "Union Chapel", "Corn Exchange", "Barrowland", "Paradiso"),
    "dish": ("beef stew", "roast chicken", "lamb tagine", "fish pie", "pulled pork", "chicken curry", "lasagne"),
    "service": tuple(corpus.SERVICES),
    "thing": tuple(corpus.THINGS),
    "topic": tuple(corpus.TOPICS),
    "record": tuple(corpus.RECORDS),
    "monthname": tuple(calendar.month_name[1:]),
}


@dataclass(frozen=True)
class Detail:
    """single-session: one thing about the user, said once. ``answer``: the placeholder
    whose value answers; ``near``: the same words in other roles (someone else's dog)."""

    key: str
    answer: str
    said: Said
    asked: tuple[str, ...]
    near: Said


@dataclass(frozen=True)
class Series:
    """multi-session: one item of ``pool`` (placeholder ``{x}``) said in each of 2-4 sessions."""

    key: str
    pool: str
    said: Said
    asked: tuple[str, ...]
    near: Said


@dataclass(frozen=True)
class Preference:
    """preference: one of ``options`` ((answer word, how the user says it)), said in passing
    (``{phrase}``); asked as a request for a recommendation."""

    key: str
    options: tuple[tuple[str, str], ...]
    said: Said
    asked: tuple[str, ...]
    near: Said


@dataclass(frozen=True)
class Update:
    """knowledge-update: a value of ``pool`` said ({v}), then changed ({old} -> {new}).
    ``ordered``: values change in the pool's order (a time improves, rent rises)."""

    key: str
    pool: str
    first: Said
    change: Said
    again: Said
    asked: tuple[str, ...]
    near: Said
    ordered: bool = False


@dataclass(frozen=True)
class Event:
    """temporal-reasoning: something the user did on the day of the session that says it."""

    key: str
    said: Said
    do: str  # "how many days ago did I {do}?"
    noun: str  # "which did I do first, {noun} or ...?"
    answer: tuple[str, ...]


@dataclass(frozen=True)
class Outing:
    """temporal-reasoning: outings of one kind (a concert), one of ``pool`` each ({x}), in
    three sessions; asked which was last month's, the latest, or the earliest."""

    key: str
    pool: str
    said: Said
    last_month: tuple[str, ...]
    latest: tuple[str, ...]
    earliest: tuple[str, ...]


DETAILS = (
    Detail("dog", "pet", said=(
        ("By the way, I adopted a {breed} puppy last weekend and we named her {pet}. She chews absolutely everything, "
         "including the skirting boards. What chew toys are safe for a puppy her size?",
         "Congratulations on {pet}! For a young {breed}, look for natural rubber chew toys sold for puppies, frozen "
         "carrots or a frozen wet flannel for teething, and avoid anything hard enough to crack a tooth, like antlers "
         "or nylon bones. Rotate two or three toys so they stay interesting, and swap her onto a toy whenever she "
         "goes for the skirting boards."),
        ("{pet} (our new {breed}, ten weeks old) cried for most of the night in her crate. I'm exhausted. Any tips "
         "for getting through the first week?",
         "The first nights are the hardest. Put the crate next to your bed so she can hear you, add something that "
         "smells of you, take her out for a quiet toilet break once in the night, and keep the days busy with short "
         "play and naps. Most puppies settle within a week or two."),
        ("Quick one about my dog: {pet} is a {breed} and she pulls like a train on the lead. Is a harness better "
         "than a collar for walks?",
         "A front-clip harness usually helps a puller a lot, because pulling turns her sideways instead of forward. "
         "Pair it with stopping dead whenever the lead goes tight and rewarding her when it's slack."),
    ), asked=("What's the name of my dog?", "What did I name the puppy I adopted?", "What is my pet called?",
              "Remind me, what's my dog's name?"),
        near=(
        ("My neighbour's {breed} {pet} barks every time the doorbell goes. How do people usually train that out of a "
         "dog?", "Desensitise the doorbell: play the sound quietly, reward calm, and build up slowly over days."),
        ("My sister is thinking about getting a {breed}. Are they good with small kids?",
         "Usually, with socialising and enough exercise, but every dog is different; meet the parents if you can."),
        ("A colleague brings her {breed} to the office. Is there a polite way to ask her to keep the dog off my "
         "desk?", "Yes: keep it friendly and specific, and suggest a bed for the dog in her own area."),
    )),
    Detail("wedding", "city", said=(
        ("My sister {name} is getting married in {city} next spring, so I need to sort out flights, a suit and a "
         "present. What should I book first?",
         "Book the flights first, since prices climb as the date gets close and weddings fill hotels nearby. Then "
         "the accommodation, then the suit, which needs time for alterations. The present can wait until the "
         "registry is out."),
        ("We just found out where the wedding is: {city}! My sister {name} picked a vineyard just outside town. Can "
         "you help me write a short toast for the rehearsal dinner?",
         "Of course. Here's a warm, two-minute toast: a short story about growing up with {name}, a line about "
         "her partner, and a wish for the two of them, ending with raising a glass to the couple."),
    ), asked=("Where is my sister's wedding taking place?", "Which city do I need to travel to for my sister's big "
              "day?", "Where is my sister getting married?"),
        near=(
        ("A friend of mine is getting married in {city} and asked me to be best man. What should the speech "
         "cover?", "A short story, a kind word about the couple, thanks to the hosts, and a toast. Keep it to five "
         "minutes."),
        ("What's the weather like in {city} in {monthname}? Thinking about a long weekend there.",
         "Usually mild, with a chance of rain; pack layers and check the forecast a few days before."),
    )),
    Detail("car", "car", said=(
        ("I finally bought a car — a used {car}, 2018, about 60,000 km on the clock. How often should I get the oil "
         "changed on it?",
         "For a {car} of that age, once a year or every 15,000 km, whichever comes first, is a safe rule; check the "
         "service book for the exact interval and the oil grade it expects."),
        ("My {car} has started squeaking when I brake, mostly in the mornings. It's only had one service since I "
         "bought it in the spring. Is it urgent?",
         "A squeak on cold, damp mornings is often just surface rust on the discs and goes after a few stops. If it "
         "stays once warm, or turns into a grinding noise, get the pads checked soon."),
    ), asked=("What car do I drive?", "Which car did I buy?", "What's the make and model of my car?"),
        near=(
        ("My dad is choosing between a {car} and another hatchback. Which is more reliable in your view?",
         "Both have decent records; the service history of the specific car matters more than the badge."),
        ("Rented a {car} on holiday and the lane assist drove me mad. Can you usually turn that off?",
         "Usually yes, from a button on the steering wheel or the settings menu, though it may come back on restart."),
    )),
    Detail("hometown", "town", said=(
        ("I grew up in {town}, a small town on the coast, and I'm writing a short piece about it for a local "
         "newsletter. Can you tighten this intro? 'The harbour was the centre of everything when I was a kid.'",
         "Try: 'When I was a child, the harbour was the heart of everything.' Then go straight into one vivid "
         "detail: the smell of the boats, the bell at low tide, whatever you remember first."),
        ("Heading back to {town} for the holidays, it's where I grew up and my parents still live there. What's a "
         "nice gift for them that isn't another scented candle?",
         "Something you can share: a framed old photo of the family, a nice dinner booked for the three of you, or "
         "a day trip somewhere they keep meaning to go."),
    ), asked=("Where did I grow up?", "What's my hometown?", "Which town am I originally from?"),
        near=(
        ("A colleague grew up in {town}. Is it true it's known for its fish market?",
         "Many coastal towns are; the best way to find out is to ask your colleague about it over lunch."),
        ("We stopped in {town} on a road trip once. What's the history of small harbour towns like that?",
         "Most grew around fishing and trade, then tourism took over as fishing declined."),
    )),
    Detail("instrument", "instrument", said=(
        ("I've been learning the {instrument} for about three months now and my fingers still hurt after practice. "
         "Is that normal?", "Some soreness in the first months is normal while you build calluses and strength. "
         "Keep sessions short and frequent, warm up first, and ask your teacher to check your posture if it's sharp "
         "pain rather than tenderness."),
        ("My {instrument} teacher wants me to practise scales every day. Can you put together a 20 minute routine "
         "that isn't mind-numbing?",
         "Five minutes of long tones or open strings, five of scales with a metronome at a slow tempo, five of one "
         "tricky passage from your piece, and five of playing something just for fun."),
    ), asked=("What instrument am I learning?", "Which instrument have I been taking lessons on?",
              "What am I learning to play?"),
        near=(
        ("My nephew wants to learn the {instrument}. Is nine too young to start?",
         "Nine is a fine age; rent an instrument sized for him before buying one."),
        ("Who are some famous {instrument} players I could point a beginner to?",
         "Look for recordings of well-known soloists and, just as useful, session players in the styles they like."),
    )),
    Detail("partner job", "job", said=(
        ("My partner {name} works as a {job}, so their shifts are all over the place. Can you help me plan a weekly "
         "dinner routine that works around that?",
         "Cook two big batches on the days you're both home, freeze portions, and keep two nights for quick "
         "meals you can make alone. Put the rota on the fridge so nobody has to think about it."),
        ("{name} just finished a run of night shifts — they're a {job} — and sleeps all day. How do I keep the "
         "flat quiet without tiptoeing around?",
         "Blackout curtains and a white noise machine in the bedroom, soft-close hinges, and doing noisy chores "
         "when they're awake help more than tiptoeing."),
    ), asked=("What does my partner do for a living?", "What's my partner's job?", "What is {name}'s profession?"),
        near=(
        ("My friend is a {job} and wants to switch careers into software. Where should they start?",
         "A free intro course, then small projects tied to what they know from their current work."),
        ("What's the typical training path to become a {job}?",
         "It varies by country; usually a recognised qualification followed by supervised practice."),
    )),
    Detail("allergy", "allergen", said=(
        ("I'm allergic to {allergen}, found that out the hard way last summer. Can you check this recipe for "
         "anything I should avoid? It's a Thai green curry.",
         "Look at the ingredient list and the sauces especially, since allergens hide in pastes and dressings. "
         "If anything is unclear, pick a brand whose label lists allergens explicitly."),
        ("Do antihistamines actually help with a {allergen} allergy like mine, or is that wishful thinking?",
         "They can ease mild symptoms like itching or hives, but they don't stop a severe reaction. If you've had "
         "swelling or breathing trouble, ask your doctor about an adrenaline pen."),
    ), asked=("What am I allergic to?", "Which allergy do I have?", "Is there anything I need to avoid because of "
              "an allergy?"),
        near=(
        ("My coworker has a {allergen} allergy. What should we avoid at the team lunch?",
         "Ask the restaurant in advance, label dishes, and let your coworker choose the place if possible."),
    )),
    Detail("school", "school", said=(
        ("My son {kid} starts at {school} in September and I need a checklist for his first week there.",
         "Uniform labelled, a spare set of clothes, water bottle, book bag, a note of pickup times, and a calm "
         "first-day morning routine you've practised once beforehand."),
        ("Great news: {kid} got a place at {school}! Help me write a short thank-you note to his nursery teacher.",
         "Dear Ms Patel, thank you for everything you did for {kid} this year. He's going to {school} with "
         "confidence, and a lot of that is down to you."),
    ), asked=("What school is my son going to?", "Which school did my kid get into?", "Where does my son go to "
              "school?"),
        near=(
        ("My friend's daughter is choosing between {school} and another school. What should she ask at the open day?",
         "Class sizes, how they support reading, homework policy, and how they handle bullying."),
    )),
    Detail("birthday", "bday", said=(
        ("My birthday is on {bday} and I'd like to do something low-key this year. Any ideas for a small dinner for "
         "six at home?",
         "A build-your-own taco night or a big tray of lasagne both scale well, need little attention while guests "
         "are there, and leave room for a cake."),
        ("Turning 35 on {bday}, which falls on a weekday this year. Is it weird to take the day off for my own "
         "birthday?", "Not at all; plenty of people do. Plan something you'd enjoy, even if it's a long walk and a "
         "nice lunch."),
    ), asked=("When is my birthday?", "What date do I celebrate my birthday?", "Which day is my birthday on?"),
        near=(
        ("My mum's birthday is on {bday}. What's a thoughtful gift for someone who has everything?",
         "An experience you share: a class, a day out, or a dinner somewhere she's mentioned."),
    )),
    Detail("degree", "degree", said=(
        ("I studied {degree} at university, so statistics isn't totally foreign to me, but I'm rusty. Where should "
         "I start with machine learning?",
         "Refresh linear algebra and probability with a short course, then do a practical course that has you train "
         "models on real data from week one; your background will help with the intuition."),
        ("Is it too late to do a master's? My undergrad was in {degree} and I've been working in software for six "
         "years.", "Not at all. Many part-time and online programmes are designed for people in your position."),
    ), asked=("What did I study at university?", "What was my major in college?", "What's my degree in?"),
        near=(
        ("My cousin wants to study {degree}. What careers does that usually lead to?",
         "More than people think: research, teaching, industry, consulting and public service all hire from it."),
    )),
    Detail("phone", "phone", said=(
        ("My phone is a {phone} and the battery has started draining overnight, about 20% while I sleep. Which "
         "settings should I check?",
         "Look at battery usage by app for anything active in the background, turn off always-on display, and "
         "check that no app is syncing constantly. A restart after an update sometimes fixes it too."),
        ("Can I use my {phone} as a webcam for video calls? My laptop's camera is terrible.",
         "Yes, with a webcam app on both ends or the built-in option on recent systems; a cheap tripod helps."),
    ), asked=("What phone do I have?", "Which smartphone do I use?", "What model is my mobile?"),
        near=(
        ("My mum wants a new phone. Would a {phone} be too complicated for her?",
         "It can be simplified: bigger text, fewer apps on the home screen, and a simple launcher."),
    )),
    Detail("best friend", "name", said=(
        ("My best friend {name} is visiting next weekend — we've known each other since primary school. Plan a "
         "Saturday for two in town?",
         "Start with a long breakfast, then a market or a museum, a walk in the afternoon, and dinner somewhere "
         "you can talk. Leave the evening open."),
        ("Writing a card for {name}'s 40th. We've been best friends for thirty years. Help me say something "
         "sincere without being cheesy?",
         "Thirty years, countless bad haircuts and one unforgettable road trip later, you're still the first person "
         "I call. Happy 40th."),
    ), asked=("Who is my best friend?", "What's my oldest friend's name?", "Who have I been friends with since "
              "childhood?"),
        near=(
        ("My colleague {name} is leaving the company. What's a good leaving gift for a friend from work?",
         "Something personal and small: a book they'd like, or a card everyone signs with a memory."),
    )),
    Detail("book club", "book", said=(
        ("Our book club picked {book} for this month and I'm only halfway through. Can you give me discussion "
         "questions that don't spoil the ending?",
         "Ask what the narrator wants and what stops them, which scene changed how you saw a character, and what "
         "the setting adds. All answerable from the first half."),
        ("It's my turn to host book club and we're doing {book}. What snacks would fit the mood?",
         "Something simple and sharable that matches the setting, plus one wild card that sparks conversation."),
    ), asked=("Which book is my book club reading?", "What book did my reading group choose?", "What novel are we "
              "discussing at my book club?"),
        near=(
        ("Is {book} a good gift for a teenager who likes fantasy?",
         "It depends on the teenager; the themes suit older readers more than younger ones."),
    )),
)

SERIES = (
    Series("work trips", "city", said=(
        ("I'm in {x} for a client workshop this week and the hotel wifi is terrible. How can I tether my laptop to "
         "my phone safely?", "Use your phone's hotspot with a strong password and WPA2 or better, keep the VPN on "
         "for work traffic, and turn the hotspot off when you're done so it doesn't drain the battery."),
        ("Back from a work trip to {x}. I need to file expenses for the flights, hotel and two team dinners. What "
         "categories do finance teams usually want?",
         "Travel, accommodation, meals (split client and team), local transport and incidentals, each with a "
         "receipt and a one-line business reason."),
        ("Flying to {x} tomorrow for two days of on-site meetings with our customer. What should I pack in a "
         "carry-on for a work trip that short?",
         "Two shirts, one jacket that works for dinner, chargers and an adapter, a small toiletry bag, and a "
         "printed copy of the agenda in case your phone dies."),
    ), asked=("How many different cities did I travel to for work?", "Which cities have I been to on business "
              "trips?", "Where have my work trips taken me?"),
        near=(
        ("My friend just moved to {x}. What neighbourhoods are nice for a weekend visit?",
         "Stay central for a short visit; the old town and the area around the market are easy walking."),
        ("Thinking about a holiday in {x}. Is four days enough?",
         "Four days covers the highlights and one day trip; add a day if you want to slow down."),
    )),
    Series("running apps", "app", said=(
        ("I've started logging my runs in {x}. Can it export everything to a spreadsheet?",
         "Most run trackers can export activities as GPX or CSV from the website's settings; import the CSV into a "
         "spreadsheet and you can chart weekly distance yourself."),
        ("Trying {x} for tracking my runs this month. Is the paid tier worth it for someone running three times a "
         "week?", "Probably not yet. The free tier covers logging and basic stats; pay only if you want structured "
         "training plans."),
    ), asked=("Which running apps have I tried?", "What apps have I used to track my runs?", "How many different "
              "run trackers have I used?"),
        near=(
        ("My brother swears by {x} for cycling. Is it any good for that?",
         "It handles cycling fine; dedicated cycling apps show more about power and cadence."),
    )),
    Series("books read", "book", said=(
        ("Just finished {x} last night and I loved it. Can you suggest something with a similar feel?",
         "If you liked its mood and pacing, try a novel by the same author or one with a similar structure; I can "
         "list three if you tell me what you liked most."),
        ("Finally got to the end of {x}. I'm not sure I understood the ending; can you explain the common "
         "readings without being condescending?",
         "There are two usual readings, one literal and one symbolic; both are supported by the last chapters."),
    ), asked=("Which books have I finished reading?", "How many books have I told you I finished?", "What have I "
              "read lately?"),
        near=(
        ("Is {x} worth reading or is it overhyped?", "Many readers love it; try the first fifty pages and decide."),
    )),
    Series("houseplants", "plant", said=(
        ("I bought a {x} for the living room today. How often should I water it, and does it need direct sun?",
         "Water when the top few centimetres of soil are dry, which indoors is roughly weekly in summer and less in "
         "winter, and give it bright indirect light rather than direct sun."),
        ("Picked up a {x} at the market for my flat. The leaves are a bit yellow already, did I buy a sick plant?",
         "Probably just stress from the move. Give it a week in a bright spot, don't overwater, and see if new "
         "growth comes in green."),
    ), asked=("What plants have I bought for my flat?", "How many houseplants have I got now?", "Which "
              "houseplants have I bought?"),
        near=(
        ("My office has a {x} that's dying. What usually kills them?", "Overwatering, mostly, and too little light."),
    )),
    Series("family gifts", "gift", said=(
        ("I got my {rel} a {x} for their birthday. Help me write the card?",
         "Happy birthday! I hope this gets lots of use, and that you think of me every time. Lots of love."),
        ("Ordered a {x} for my {rel} as a thank-you for helping with the move. Is that a thoughtful gift or a "
         "boring one?", "Thoughtful: it's useful and it fits them. Add a note saying what the help meant to you."),
    ), asked=("What gifts have I bought for my family?", "What presents did I get for family members?"),
        near=(
        ("Is a {x} a good wedding present?", "It can be, if it's on their list or fits how they live."),
    )),
    Series("online courses", "course", said=(
        ("I signed up for an online course on {x}, about four hours a week. How should I schedule study time around "
         "work?", "Two fixed weekday slots of an hour plus one longer weekend session works for most people. Put "
         "them in your calendar like meetings."),
        ("Started a course on {x} tonight. The first module was mostly theory. Is it normal to feel lost at this "
         "point?", "Yes. The first module of most courses front-loads vocabulary; it usually clicks once you do "
         "the first exercise."),
    ), asked=("Which online courses have I signed up for?", "What courses am I taking?", "How many online classes "
              "did I enrol in?"),
        near=(
        ("My team lead suggested a course on {x}. Is that useful for an engineer?",
         "It can be; pick one with exercises rather than only videos."),
    )),
    Series("home repairs", "repair", said=(
        ("Fixed the {x} myself this weekend with the help of a video. What other DIY jobs are beginner friendly?",
         "Re-sealing a bath, bleeding radiators, changing a light fitting (with the power off at the board), and "
         "patching small holes in plaster are good next steps."),
        ("I'm proud of myself: sorted out the {x} without calling anyone. Should I keep any tools on hand for next "
         "time?", "An adjustable spanner, a set of screwdrivers, PTFE tape, a torch and a bucket cover most small "
         "jobs."),
    ), asked=("What have I repaired around the house myself?", "Which DIY fixes have I done at home?"),
        near=(
        ("My landlord says a {x} is the tenant's job. Is that usually true?",
         "It depends on the tenancy agreement; small repairs often are, anything structural is not."),
    )),
    Series("side project languages", "lang", said=(
        ("For my weekend side project I'm writing a small CLI in {x}. What's the idiomatic way to parse arguments?",
         "Use the community's standard argument parsing library rather than rolling your own; it will give you "
         "help text and subcommands for free."),
        ("Rewrote my little side project, a habit tracker, in {x} over the holidays for fun. How do I package it "
         "so friends can install it?", "Publish a release with prebuilt binaries for each platform, or use the "
         "language's package registry if your friends already have its toolchain."),
    ), asked=("Which programming languages have I used for side projects?", "What languages have I written my "
              "hobby projects in?"),
        near=(
        ("Our team is debating {x} for a new service. What are the usual arguments against it?",
         "Hiring, library maturity for your domain, and the time it takes the team to become productive."),
    )),
    Series("restaurants", "restaurant", said=(
        ("We had dinner at {x} last night, the new place near the river. The service was slow but the food was "
         "great. How do I write a fair review?",
         "Lead with what stood out, be specific about the slow service without exaggerating, and say whether you'd "
         "go back."),
        ("Tried {x} for lunch today and the bill was way higher than the menu suggested. Is it normal for a "
         "service charge to be added automatically?",
         "Many places add a discretionary service charge; you can ask for it to be removed if you weren't happy."),
    ), asked=("Which restaurants have I been to?", "Where have I eaten out recently?"),
        near=(
        ("Is {x} good for a birthday dinner for eight?", "Call ahead; smaller places often need a set menu for eight."),
    )),
    Series("races", "race", said=(
        ("Signed up for the {x}, my first race in years. What should my training look like for the next two "
         "months?", "Three runs a week: one easy, one with short intervals, one longer at a relaxed pace, building "
         "the long run by ten percent a week and easing off in the final week."),
        ("Entered the {x} today, the entry fee was steep. Any tips for pacing on the day?",
         "Start slower than feels right for the first kilometre, settle into a pace you could hold a conversation "
         "at, and only push in the last stretch."),
    ), asked=("Which races have I entered?", "What running events have I signed up for?"),
        near=(
        ("My colleague ran the {x} last year. Is it a hilly course?",
         "Check the course profile on the organiser's site; most city courses are mostly flat."),
    )),
    Series("bike spending", "amount", said=(
        ("Spent {x} on a new {part} for my road bike today. Was that a fair price, or did the shop rip me off?",
         "That's within the normal range for a mid-range part; fitting is sometimes extra, so check the receipt."),
        ("My road bike needed a new {part}; the shop charged {x} including fitting. Should I learn to do that "
         "myself?", "It's a good one to learn; you'd need a couple of specific tools, which pay for themselves "
         "after two jobs."),
    ), asked=("How much have I spent on my bike in total?", "What's the total I've paid for bike parts so far?"),
        near=(
        ("Is {x} a reasonable budget for a kid's first bike?", "Yes, for a second-hand one in good condition."),
    )),
    Series("podcasts", "podcast", said=(
        ("I've been listening to {x} on my commute and I'm hooked. Anything similar you'd suggest?",
         "If you like narrative episodes with deep research, look for shows in the same network; ask me for three "
         "picks and I'll list them."),
        ("Started {x} from episode one this week. Is it worth going back through the archive or should I just "
         "follow new episodes?", "The older episodes hold up; skim the titles and pick the topics you like."),
    ), asked=("Which podcasts do I listen to?", "What podcasts have I been following?"),
        near=(
        ("Someone at work recommended {x}. What's it about?", "It's an interview and storytelling show; try one."),
    )),
)

PREFERENCES = (
    Preference("diet", (("vegetarian", "I'm vegetarian"), ("vegan", "I've been vegan for years"),
                        ("pescatarian", "I only eat fish, no meat — pescatarian, I suppose"),
                        ("gluten", "I'm coeliac, so nothing with gluten")), said=(
        ("Planning lunch for a workshop I'm running on Thursday. {phrase}, but the group eats everything. What "
         "should I order for twelve people?",
         "Order a mix of sharing platters that cover everyone: a grain salad, roasted vegetables, flatbreads and "
         "dips, and one protein dish on the side, with labels."),
        ("{phrase}, and I'm trying to cook at home more instead of ordering takeaway. Which kitchen gadgets are "
         "actually worth the money?", "A good chef's knife, a heavy pan, a rice cooker if you eat a lot of grains, "
         "and a stick blender for soups. Skip the single-purpose gadgets."),
        ("{phrase}, and my lunches are getting boring. What can I batch cook on a Sunday for the week?",
         "A big tray of roasted vegetables, a pot of grains or lentils, and two sauces you can mix and match. "
         "It keeps for four days in the fridge."),
    ), asked=("Can you suggest a dinner recipe for me?", "What should I cook tonight?", "Any ideas for a meal I "
              "could make this weekend?"),
        near=(
        ("My dad loves a good {dish}. Can you give me a recipe for his birthday dinner?",
         "Here's a classic version for six, with a make-ahead step so you're not cooking while guests arrive."),
        ("What's a good recipe for {dish} for six people?", "Here's one that scales well and freezes fine."),
    )),
    Preference("coffee", (("dark roast", "I only really like dark roast coffee, the fruity light stuff tastes sour "
                                         "to me"),
                          ("light roast", "I'm into light roasts, the fruitier the better"),
                          ("decaf", "I'm off caffeine these days, decaf only"),
                          ("espresso", "I drink espresso, never filter")), said=(
        ("{phrase}. Is a moka pot worth getting, or should I save for a proper machine?",
         "A moka pot is cheap, compact and makes a strong, rich cup; it's a great way to start before spending "
         "more on a machine."),
        ("Unrelated, but {phrase}. Anyway: how do I descale a kettle without vinegar smell everywhere?",
         "Citric acid dissolved in water, boiled and left for twenty minutes, works without the smell. Rinse twice."),
    ), asked=("What coffee beans should I buy?", "Can you recommend a coffee for me to try?", "I'm going to a "
              "coffee roaster tomorrow; what should I get?"),
        near=(
        ("My flatmate wants to get into coffee. What grinder should she start with?",
         "A burr grinder; hand grinders are a good budget start."),
    )),
    Preference("meetings", (("long meetings", "I hate long meetings — anything over half an hour and I lose focus"),
                            ("async", "I'd rather have written async updates than meetings"),
                            ("agenda", "I can't stand meetings without an agenda")), said=(
        ("Our team grew to eight people and my calendar is a mess. {phrase}. How do I push back politely?",
         "Suggest a default length of 25 minutes, ask for an agenda in every invite, and propose a written update "
         "for anything that's only information."),
        ("Can you help me write my Slack status for focus days? Something like: {phrase}.",
         "Focus day: heads down on deep work, replies after 4pm. If it's urgent, call."),
    ), asked=("How should I run my team's weekly meeting?", "Any advice for structuring the planning session I'm "
              "hosting next week?", "I have to organise a kickoff with the new team; how would you set it up?"),
        near=(
        ("My manager wants a weekly one-to-one template. What goes in one?",
         "Wins, blockers, priorities for the week, and one thing about growth."),
    )),
    Preference("travel", (("train", "I'd rather take the train than fly whenever I can"),
                          ("window", "I always book a window seat, I can't sleep otherwise"),
                          ("drive", "I like to drive myself rather than deal with airports")), said=(
        ("Honestly {phrase}. Does that make a difference to the carbon footprint of a trip to a conference?",
         "For distances under about 700 km it usually does, and door to door it's often not much slower."),
        ("Random question but {phrase}, and I'm planning next year's holidays. How far ahead should I book?",
         "Three months ahead is usually the sweet spot for price and choice; earlier for bank holiday weekends."),
    ), asked=("How should I get to {city} for my trip next month?", "What's the best way for me to travel to the "
              "conference?", "Can you plan how I get to my cousin's place on the other side of the country?"),
        near=(
        ("My colleague needs to get to {city} cheaply. Flights or coach?",
         "Compare door to door; the coach is cheaper but much slower."),
    )),
    Preference("music", (("jazz", "I mostly listen to jazz while I work"),
                         ("classical", "I can't work with lyrics, it has to be classical or ambient"),
                         ("metal", "I'm a metal fan, the heavier the better")), said=(
        ("{phrase}. Can you build a simple home office setup list, including speakers, for under 500?",
         "A decent chair matters most, then a monitor at eye height, a desk lamp, and a pair of powered bookshelf "
         "speakers, which sound far better than laptop speakers."),
        ("{phrase}. Is it worth paying for a music streaming service, or is the radio enough?",
         "If you listen every day, a paid service is worth it for offline downloads and no ads."),
        ("Working from a café today, noisy as anything. {phrase}, so I need headphones that block the chatter. Any "
         "recommendations?", "Closed-back noise-cancelling headphones; try them in a shop for comfort first."),
    ), asked=("Can you recommend some music for my commute?", "What should I put on while I focus?", "Make me a "
              "playlist for a long drive."),
        near=(
        ("My sister wants a record player for her birthday. Any tips?", "Get one with a proper cartridge and "
         "separate speakers."),
    )),
    Preference("exercise", (("outdoors", "I much prefer exercising outdoors to going to the gym"),
                            ("swimming", "I hate running but I love swimming"),
                            ("yoga", "I like low-impact stuff, yoga mostly")), said=(
        ("My knees have been stiff in the mornings. {phrase}, if that matters. Should I see a physio?",
         "If it lasts more than a few weeks or there's swelling, yes. Meanwhile gentle mobility work helps."),
        ("{phrase}. Any tips to stay motivated to exercise through the winter?",
         "Plan sessions like appointments, get the right kit for the cold, and find someone to train with."),
        ("{phrase}. Is a fitness watch worth it or a gimmick?", "Worth it if you like data and it motivates you."),
    ), asked=("Can you suggest a workout plan for me?", "What exercise routine would suit me?", "I want to get "
              "fitter this year. Where should I start?"),
        near=(
        ("My partner wants a gym routine for building strength. What's a good beginner plan?",
         "Three full-body sessions a week with compound lifts."),
    )),
    Preference("reading", (("sci-fi", "I love hard sci-fi"), ("historical fiction", "I mostly read historical "
                                                                                   "fiction"),
                           ("mystery", "I'm a sucker for a good mystery novel")), said=(
        ("Setting up a reading corner in the flat. {phrase}, and I'm running out of shelf space. Any clever "
         "storage ideas?", "Floor-to-ceiling shelves on one wall, a bench with storage, and rotating a box of "
         "finished books out to a charity shop every few months."),
        ("{phrase}. Is an e-reader worth it if I mostly read in bed?", "Yes, a backlit one is easier on the eyes."),
    ), asked=("Recommend a book for my holiday.", "What should I read next?", "I need something to read on the "
              "plane. Ideas?"),
        near=(
        ("My nephew is ten. What book would get him into reading?", "An adventure series with short chapters."),
    )),
    Preference("films", (("horror", "I can't stand horror films"), ("black-and-white", "I love old black-and-"
                                                                                         "white films"),
                         ("documentary", "I'd pick a documentary over a blockbuster every time")), said=(
        ("Friends want to do a movie marathon at mine on Saturday. {phrase}, for what it's worth. How do I set up a "
         "projector in a small living room?", "Put the projector behind the seating, use a blank wall or a cheap "
         "screen, and close the curtains; a soundbar makes a big difference."),
        ("{phrase}. Which streaming service has the biggest back catalogue?", "It varies by country; check a "
         "catalogue site before subscribing."),
    ), asked=("Suggest a movie for Friday night.", "What film should I watch this weekend?", "Can you pick "
              "something for me to watch tonight?"),
        near=(
        ("My brother loves horror films. What's a good one for Halloween?", "A classic slow-burn one."),
    )),
    Preference("stay", (("guesthouse", "I always prefer small family-run guesthouses over big hotels"),
                        ("apartment", "I like renting an apartment so I can cook"),
                        ("hostel", "I'm happy in hostels as long as I get a private room")), said=(
        ("{phrase}. How do I avoid the ones with fake reviews?", "Read the recent negative reviews, look for "
         "photos from guests, and be wary of many short five-star reviews posted together."),
        ("Booking a trip for the autumn. {phrase}. Is it safer to book through a platform or directly?",
         "Booking directly can be cheaper; platforms give more protection if something goes wrong."),
    ), asked=("Where should I stay on my trip to {city}?", "Can you help me find accommodation for my holiday?"),
        near=(
        ("My parents want a luxury hotel in {city} for their anniversary. Any suggestions?",
         "Look for one in the old town with a view; book breakfast in."),
    )),
    Preference("editor", (("vim", "I use Vim keybindings everywhere and can't live without them"),
                          ("jetbrains", "I prefer JetBrains IDEs, the refactoring tools are worth it"),
                          ("emacs", "I've used Emacs for a decade")), said=(
        ("{phrase}. How do I get the same muscle memory in a browser?", "There are browser extensions for modal "
         "keyboard navigation; they take a day to get used to."),
        ("New job starts Monday and {phrase}. What should I set up first on the laptop?", "Your shell, git config, "
         "SSH keys, and your editor config from your dotfiles."),
    ), asked=("Which editor setup would you recommend for my new laptop?", "What IDE should I install for the "
              "new project?"),
        near=(
        ("My intern is choosing an editor. What should a beginner use?", "Something with good defaults."),
    )),
    Preference("schedule", (("morning", "I'm a morning person, my best focus is before 10am"),
                            ("night owl", "I'm a night owl, I do my best work after 9pm")), said=(
        ("{phrase}. How do I make the most of that without annoying my team?",
         "Protect those hours for deep work, and batch meetings and messages into the rest of the day."),
        ("Sleep has been weird lately. {phrase}, but I've been waking up at 3am. Any tips?",
         "Keep the wake-up time fixed, avoid screens before bed, and get daylight early in the day."),
    ), asked=("When should I schedule my deep work?", "How should I plan my study time this term?"),
        near=(
        ("My teenager stays up until 2am. Is that a phase?", "Partly biology; a fixed wake time helps."),
    )),
    Preference("drinks", (("alcohol", "I don't drink alcohol"), ("natural wine", "I love natural wine"),
                          ("craft beer", "I'm really into craft beer, sours especially")), said=(
        ("Hosting friends next month. {phrase}, so what else can I serve that still feels special?",
         "Make a couple of interesting drinks: a good shrub, a homemade lemonade, and something sparkling."),
        ("{phrase}. Is there an app for tracking what I've tried?", "There are several; pick one that works "
         "offline."),
    ), asked=("What should I bring to the dinner party on Saturday?", "I'm buying drinks for a barbecue; what "
              "should I get for myself?"),
        near=(
        ("What wine goes with {dish}?", "A medium-bodied red usually works."),
    )),
    Preference("holidays", (("mountains", "I'm not a beach person at all, I'd rather be hiking in the mountains"),
                            ("city breaks", "I love city breaks with lots of museums"),
                            ("beach", "all I want from a holiday is a beach and a book")), said=(
        ("{phrase}. Is travel insurance worth it for short trips in Europe?",
         "Often yes, for cancellations and medical costs; check what your bank card already covers."),
        ("Booking leave for the summer. {phrase}. How many days off is reasonable to take at once?",
         "Two weeks is common and usually fine if you plan handovers."),
    ), asked=("Where should I go on holiday this summer?", "Can you suggest a trip for my week off in June?"),
        near=(
        ("My parents love beach holidays. Where's warm in October?", "The Canaries are a safe bet."),
    )),
)

UPDATES = (
    Update("residence", "city", first=(
        ("I live in {v} and the rent keeps going up. What should I look for when negotiating a lease renewal?",
         "Know the local market rate, offer a longer tenancy in exchange for a smaller increase, and ask for any "
         "repairs to be done as part of the deal."),
        ("Living in {v} means I'm an hour ahead of most of my team. Can you help me rework my meeting hours?",
         "Block your first hour for focus while they're offline, and keep shared meetings in the overlap."),
    ), change=(
        ("Big news: I moved from {old} to {new} last month! Still setting things up. What do I need to do to register "
         "with a local doctor?", "Find the practices that cover your new address, register online or in person "
         "with proof of address and ID, and ask your old practice to transfer your records."),
        ("I live in {new} now, we moved from {old} at the start of the month. What's a good way to meet people in a "
         "new city?", "Join something that meets weekly (a running club, a choir, a language exchange) so you see "
         "the same faces, and say yes to every invitation for the first couple of months."),
        ("Now that I've relocated to {new} (goodbye {old}!), I need to update my address everywhere. Can you give me "
         "a checklist?", "Bank, employer, doctor, dentist, car and insurance documents, subscriptions, voter "
         "registration and a mail redirect for a few months."),
    ), again=(
        ("The winters in {v} are darker than I expected. Is a daylight lamp worth it?",
         "For many people, yes: twenty minutes in the morning helps."),
    ), asked=("Where do I live now?", "Which city am I living in these days?", "What city is home for me at the "
              "moment?"),
        near=(
        ("My colleague {name} just moved from {x} to {y}. What's a good welcome gift?", "Something local to {y}."),
    )),
    Update("employer", "company", first=(
        ("I work at {v} as a data engineer and we're hiring. Can you help me write a job ad that doesn't sound "
         "like every other one?", "Lead with the problems the person will solve, be concrete about the stack, "
         "state the salary range, and cut the list of requirements to what really matters."),
    ), change=(
        ("First week at my new job at {new} done! I left {old} after four years. How do I make a good impression in "
         "the first month?", "Listen more than you talk, ship one small thing early, write down what confuses you, "
         "and set up one-to-ones with the people you'll work with most."),
        ("I accepted the offer from {new}, so I'm leaving {old}. Help me write a resignation letter?",
         "Keep it short: the date, your notice period, a thank-you, and an offer to help with the handover."),
        ("Quick update for context: I work at {new} now, I left {old} in the spring. Can you help me rewrite my "
         "LinkedIn summary?", "Lead with what you do now and the kind of problems you like, then one line on your "
         "earlier work; keep it under a hundred words."),
    ), again=(
        ("At {v} we use a four-day week in summer. How do I plan projects around that?",
         "Plan in shorter iterations and avoid Friday handovers."),
    ), asked=("Where do I work now?", "Which company am I working for?", "Who's my current employer?"),
        near=(
        ("A friend got an offer from {x}. What should she ask before accepting?", "About the team, growth and pay."),
    )),
    Update("manager", "name", first=(
        ("My manager {v} wants a written proposal for the migration by Friday. Can you help me outline it?",
         "Problem, options considered, recommendation, cost and risk, rollout plan, and what you need from them."),
    ), change=(
        ("Reorg news: I have a new manager, {new}. {old} moved over to the platform group. How do I start the "
         "relationship well?", "Ask how they like to receive updates, share your current priorities and what "
         "you need, and agree on a regular one-to-one."),
        ("From this week I report to {new} instead of {old}. What should I bring to our first one-to-one?",
         "Your current projects, what's going well, what's blocked, and your goals for the next six months."),
    ), again=(
        ("{v}, my manager, asked me to mentor a junior. How do I structure that?", "Weekly check-ins and one goal."),
    ), asked=("Who is my manager now?", "Who do I report to at work?", "Who's my boss these days?"),
        near=(
        ("My friend's manager {x} micromanages everything. How can she push back?", "Agree on check-ins up front."),
    )),
    Update("billing database", "db", first=(
        ("Our billing service runs on {v}. The invoice lookup by customer is slow; what index would you add?",
         "A composite index on (customer_id, created_at) should cover the lookup and the sort that follows it."),
    ), change=(
        ("We finally switched billing from {old} to {new} last night. Update the runbook so nobody connects to the "
         "old cluster?", "Runbook updated: the billing section now describes the new setup and the old connection "
         "steps are gone."),
        ("Heads up: the billing service moved off {old} and onto {new} this week. Can you adjust the backup script?",
         "Done: the nightly job now dumps the new database and the old dump step is removed."),
    ), again=(
        ("Billing on {v} threw deadlock errors under load again. What should I look at first?",
         "The lock wait logs, then whether two code paths update the same rows in a different order."),
    ), asked=("What database does our billing service use now?", "Which database is billing on at the moment?",
              "Where does billing keep its data these days?"),
        near=(
        ("The search team moved from {x} to {y}. What usually goes wrong in a migration like that?",
         "Query semantics, collation, and connection pool settings."),
    )),
    Update("5k time", "time5k", ordered=True, first=(
        ("My 5k personal best is {v} and I'd like to go faster. What sort of interval sessions help most?",
         "Repeats of 400 m to 1 km at goal pace with equal recovery, once a week, plus one easy long run."),
    ), change=(
        ("New 5k PB this morning: {new}! My old best was {old}. How long should I rest before the next hard "
         "session?", "Two or three easy days, then back to your normal week; listen to your legs."),
        ("Smashed my 5k record today, {new}, down from {old}. How do I avoid plateauing?",
         "Vary the sessions, add strength work twice a week, and build volume slowly."),
    ), again=(
        ("With a 5k best of {v}, what would a realistic 10k target be?", "Roughly double plus a minute or two."),
    ), asked=("What's my current best 5k time?", "What is my fastest 5k?", "What's my personal record over five "
              "kilometres?"),
        near=(
        ("My friend ran a 5k in {x}. Is that good for a beginner?", "Yes, that's a solid first time."),
    )),
    Update("gym frequency", "often", first=(
        ("I go to the gym {v} a week at the moment. Is that enough to see strength gains?",
         "Yes, with progressive overload and enough protein; consistency matters more than frequency."),
    ), change=(
        ("I've stepped it up: the gym {new} a week now instead of {old}. Should I split upper and lower body?",
         "At that frequency an upper/lower split works well; keep one full rest day."),
        ("Changed my routine, I'm going {new} a week now (it used to be {old}). How do I avoid overtraining?",
         "Track how you feel and your sleep, deload every fourth or fifth week, and eat enough."),
    ), again=(
        ("Going to the gym {v} a week, I'm always starving. Healthy snacks?", "Yoghurt, nuts, fruit, boiled eggs."),
    ), asked=("How often do I go to the gym these days?", "How many times a week am I working out now?"),
        near=(
        ("My dad goes to the gym {x} a week at 70. Is that safe?", "If his doctor is happy, it's great."),
    )),
    Update("team size", "team", ordered=True, first=(
        ("My team is {v} at the moment, and the standup takes forever. How do I keep it short?",
         "Walk the board instead of the people, timebox to fifteen minutes, and move discussions to after."),
    ), change=(
        ("With the new hires we've grown from {old} to {new} people. Should I split the team?",
         "Consider it when communication starts to suffer; two teams around clear ownership works."),
        ("We're {new} people now, up from {old}. How do I onboard three engineers at once?",
         "A shared onboarding doc, a buddy each, and a starter ticket each in the first week."),
    ), again=(
        ("For a team of {v}, how many on-call rotations make sense?", "One rota, a week each."),
    ), asked=("How big is my team now?", "How many people are on my team these days?"),
        near=(
        ("My friend's team is {x}. Is that too many for one manager?", "It's at the upper end."),
    )),
    Update("broadband", "provider", first=(
        ("My broadband is with {v} and it drops every evening. How do I tell if it's the router or the line?",
         "Plug a laptop straight into the router with a cable; if it still drops, it's the line."),
    ), change=(
        ("Switched broadband from {old} to {new}, finally. How do I set up the new router securely?",
         "Change the admin password, use WPA3 if available, update the firmware, and turn off WPS."),
        ("Left {old} for {new} for the internet at home, the speed is much better. Do I need to return the old "
         "router?", "Usually yes, within a set time; check the letter they sent."),
    ), again=(
        ("{v} support keeps me on hold for an hour. Is there a faster way?", "Use the online chat."),
    ), asked=("Who is my internet provider now?", "Which company do I get broadband from at the moment?"),
        near=(
        ("My parents are with {x}. Is it worth switching?", "Compare the price per month after the deal ends."),
    )),
    Update("rent", "rent", ordered=True, first=(
        ("My rent is {v} a month and I'm trying to budget properly. Can you sketch a simple monthly budget?",
         "Needs, wants and savings; put rent and bills first, then a fixed savings transfer on payday."),
    ), change=(
        ("The landlord raised my rent from {old} to {new}. Is that legal with two months' notice?",
         "It depends on your tenancy and local rules; check the notice requirements in your contract."),
        ("Renewed the lease, but the rent went up to {new} from {old}. Should I rework my budget?",
         "Yes: take the difference out of the wants first."),
    ), again=(
        ("With rent at {v}, how much emergency fund should I have?", "Three to six months of essentials."),
    ), asked=("How much is my rent now?", "What do I pay in rent these days?"),
        near=(
        ("My friend pays {x} for a one-bed. Is that normal?", "It depends a lot on the area."),
    )),
    Update("dashboard framework", "framework", first=(
        ("The customer dashboard is built with {v}. How should we structure state for the filters?",
         "Keep filter state in the URL so views are shareable, and derive everything else from it."),
    ), change=(
        ("We rewrote the dashboard from {old} to {new} over the quarter. What's worth documenting for the team?",
         "The component structure, state management, build and deploy steps, and the gotchas you hit."),
        ("The dashboard is on {new} now, the {old} code is deleted. Can you help update the contributor guide?",
         "Sure: new setup steps, test commands and the folder layout."),
    ), again=(
        ("Our dashboard in {v} is slow to load. Where do I start?", "Measure the bundle size first."),
    ), asked=("What framework is the dashboard built with now?", "Which frontend framework does our dashboard "
              "use?"),
        near=(
        ("The marketing site uses {x}. Should we share components with it?", "Only if both sides stay stable."),
    )),
    Update("standup time", "time", first=(
        ("Our standup is at {v} every morning and half the team is late. How do I fix that without nagging?",
         "Ask the team whether the time works; often the fix is a different time, not more reminders."),
    ), change=(
        ("We moved standup from {old} to {new} after the vote. Can you write the calendar note?",
         "Standup is now at {new}, same link, fifteen minutes."),
        ("Standup's at {new} from Monday (it was {old}). Draft a Slack message?",
         "Heads up: standup moves to {new} starting Monday. Same link, same format."),
    ), again=(
        ("Standup at {v} clashes with school drop-off for two people. Options?", "Go async twice a week."),
    ), asked=("What time is our standup now?", "When is the daily standup these days?"),
        near=(
        ("The other team has standup at {x}. Should we align?", "Only if you share a lot of work."),
    )),
    Update("language level", "level", ordered=True, first=(
        ("My Portuguese is at {v} level. What's the best way to get better at listening?",
         "Podcasts for learners at slow speed, then TV with subtitles in Portuguese, a little every day."),
    ), change=(
        ("Passed my Portuguese exam: I'm officially {new} now, up from {old}! What should I focus on next?",
         "Speaking with natives, reading longer texts, and a tutor for conversation once a week."),
    ), again=(
        ("At {v} in Portuguese, can I follow the news?", "Mostly, with effort; try the slow news podcasts."),
    ), asked=("What level is my Portuguese at now?", "How good is my Portuguese these days?"),
        near=(
        ("My friend is {x} in Spanish. How long to reach the next level?", "Several months of regular study."),
    )),
)
# Values only the updates use, in the order ordered ones change in.
POOLS.update({
    "time5k": ("31:40", "29:55", "28:12", "26:30", "25:05", "23:48", "22:36"),
    "often": ("twice", "three times", "four times", "five times"),
    "team": ("four", "five", "six", "eight", "ten", "twelve"),
    "rent": ("£950", "£1,050", "£1,120", "£1,200", "£1,340"),
    "time": ("9:00", "9:30", "9:45", "10:00", "10:30", "11:00"),
    "level": ("A1", "A2", "B1", "B2", "C1"),
})

EVENTS = (
    Event("pottery", said=(
        ("Just got back from my first pottery class; it's eight weeks of wheel throwing and my first bowl collapsed "
         "twice. How do I keep the clay from drying out between sessions?",
         "Wrap pieces loosely in plastic, mist them lightly if the edges look pale, and store them somewhere cool."),
        ("Started a ceramics course this evening! The wheel is much harder than it looks. Any tips for centring?",
         "Brace your elbows against your thighs, use plenty of water, and let the wheel do the work."),
    ), do="start the pottery class", noun="the pottery class", answer=("pottery", "ceramics")),
    Event("hike", said=(
        ("Did a 20 km hike along the ridge today with friends and my legs are done. What should I eat to recover?",
         "Carbs and protein within a couple of hours, plenty of water, and an easy walk tomorrow."),
        ("We went on a hiking trip in the hills today, about six hours of walking. My boots gave me blisters. How "
         "do I treat them?", "Leave them intact if you can, cover them with a blister plaster, and air your feet."),
    ), do="go on the hiking trip", noun="the hiking trip", answer=("hike", "hiking")),
    Event("baking", said=(
        ("Spent the whole afternoon at a baking course and made my first proper croissants! Can I freeze them?",
         "Yes: freeze shaped, unbaked croissants on a tray, then bag them; bake from frozen with a little longer."),
        ("I did a bread-baking workshop today and came home with three loaves. How long will sourdough keep?",
         "Three or four days in a bread bag; slice and freeze the rest."),
    ), do="do the baking course", noun="the baking course", answer=("baking", "croissants", "bread")),
    Event("half marathon", said=(
        ("Ran my first half marathon this morning! 2 hours 4 minutes. Everything hurts. How long should I rest?",
         "A few days of nothing or easy walking, then short easy runs; a rough rule is a day per mile before "
         "racing hard again."),
    ), do="run the half marathon", noun="the half marathon", answer=("half marathon",)),
    Event("climbing", said=(
        ("Went bouldering for the first time today at the climbing gym near work. My forearms are on fire. Normal?",
         "Very normal: forearms take the load at first. Rest a couple of days and stretch gently."),
    ), do="go climbing for the first time", noun="my first climbing session", answer=("climbing", "bouldering")),
    Event("yoga retreat", said=(
        ("Back from a weekend yoga retreat today, feeling very calm. How do I keep a home practice going?",
         "Start with ten minutes a day at the same time, and one longer class a week."),
    ), do="come back from the yoga retreat", noun="the yoga retreat", answer=("yoga",)),
    Event("food bank", said=(
        ("Volunteered at the food bank today, sorting donations for four hours. How can I help more regularly?",
         "Ask the coordinator about a fixed weekly shift; regulars are what food banks need most."),
    ), do="volunteer at the food bank", noun="volunteering at the food bank", answer=("food bank", "volunteer")),
    Event("kayaking", said=(
        ("Went sea kayaking this morning for the first time, saw seals! Is it worth buying my own kayak?",
         "Not yet; rent a few times and take a course before spending on gear."),
    ), do="go kayaking", noun="the kayaking trip", answer=("kayak",)),
    Event("wine tasting", said=(
        ("Had a wine tasting this evening at a little vineyard outside town. How do people remember what they "
         "liked?", "Take a photo of each label and write one line of notes; an app helps if you do it often."),
    ), do="go to the wine tasting", noun="the wine tasting", answer=("wine tasting",)),
    Event("salsa", said=(
        ("Took my first salsa class tonight; I have two left feet. Will it get easier?",
         "Yes: the basic step becomes automatic after a few weeks, then it gets fun."),
    ), do="take the salsa class", noun="the salsa class", answer=("salsa",)),
    Event("photo walk", said=(
        ("Did a photography workshop today, a photo walk around the old town. How do I pick a first prime lens?",
         "A 35 mm or 50 mm equivalent is the classic first prime; cheap, sharp and light."),
    ), do="do the photography workshop", noun="the photography workshop", answer=("photography", "photo walk")),
    Event("chess", said=(
        ("Played in my first chess tournament today. Lost three, won two. How do I study openings without getting "
         "overwhelmed?", "Pick one opening for white and one defence for black, and learn the ideas, not lines."),
    ), do="play in the chess tournament", noun="the chess tournament", answer=("chess",)),
    Event("camping", said=(
        ("Just got back from a camping weekend by the lake. My sleeping bag was useless. What should I look for?",
         "A comfort rating a few degrees below the coldest night you expect, and a good sleeping mat."),
    ), do="go camping by the lake", noun="the camping weekend", answer=("camping",)),
    Event("escape room", said=(
        ("Did an escape room with the team today and we got out with two minutes to spare. Good team-building "
         "follow-ups?", "A cooking class, a quiz night, or a volunteering day all work well."),
    ), do="do the escape room", noun="the escape room", answer=("escape room",)),
    Event("choir", said=(
        ("Went to my first choir rehearsal tonight, I'm a baritone apparently. How do I practise at home?",
         "Learn your part with a recording, sing with the full track, and warm up before each session."),
    ), do="join the choir", noun="my first choir rehearsal", answer=("choir",)),
    Event("bookshelf", said=(
        ("Built a bookshelf from scratch today in the community workshop! How do I finish the wood?",
         "Sand to 180 grit, then oil or water-based varnish, two or three thin coats."),
    ), do="build the bookshelf", noun="building the bookshelf", answer=("bookshelf",)),
    Event("paint bedroom", said=(
        ("Painted the bedroom today, two coats of deep green. The edges are messy. How do I tidy them?",
         "A small angled brush and steady hand, or tape and a second pass once dry."),
    ), do="paint the bedroom", noun="painting the bedroom", answer=("painted", "paint")),
    Event("swim", said=(
        ("Swam a full kilometre without stopping today, first time ever! What should I aim for next?",
         "Add 100 m every week or two, or work on speed with short intervals."),
    ), do="swim the kilometre", noun="my first kilometre swim", answer=("swam", "swim")),
    Event("cooking class", said=(
        ("Did a Thai cooking class tonight and made green curry from scratch. Where can I buy galangal?",
         "Asian supermarkets, fresh or frozen; ginger works in a pinch but tastes different."),
    ), do="take the Thai cooking class", noun="the Thai cooking class", answer=("cooking class", "Thai")),
    Event("charity ride", said=(
        ("Finished the 100 km charity bike ride today and raised £600! How do I thank the donors?",
         "A short post or email with a photo, what the money will do, and a personal thank-you."),
    ), do="do the charity bike ride", noun="the charity ride", answer=("charity", "bike ride")),
)

OUTINGS = (
    Outing("concert", "band", said=(
        ("Went to see {x} live at the {venue} tonight, ears still ringing. Are those cheap foam earplugs any "
         "good?", "They work, but musician's earplugs keep the sound clearer; worth it if you go to gigs often."),
        ("Saw {x} in concert this evening! The support act was great too. How do I find out who they were?",
         "Check the venue's page or the tour announcement; setlist sites usually list support acts."),
    ), last_month=("Which band did I see live last month?", "Who did I see in concert last month?"),
        latest=("Which band did I see most recently?", "What was the last gig I went to?"),
        earliest=("Which was the first concert I told you about?", "What's the earliest gig I mentioned going to?")),
    Outing("museum", "museum", said=(
        ("Spent the afternoon at the {x} today, really good exhibition. Are museum memberships worth it?",
         "If you go more than three times a year, usually; you also skip queues for special exhibitions."),
        ("Visited the {x} this morning with my nephew. What's a good follow-up activity for a curious eight-year "
         "-old?", "Let him pick one thing he saw and find a book or a video about it together."),
    ), last_month=("Which museum did I visit last month?", "What museum did I go to last month?"),
        latest=("What was the last museum I visited?", "Which museum did I go to most recently?"),
        earliest=("Which museum did I visit first?", "What's the earliest museum trip I mentioned?")),
    Outing("cinema", "film", said=(
        ("Saw {x} at the cinema tonight. I loved it but I'm still confused by the ending. What's the usual "
         "interpretation?", "There are a couple of common readings; tell me what you noticed and we'll go through "
         "them."),
        ("Went to the cinema this evening for {x}. Why are cinema snacks so expensive?",
         "Ticket revenue mostly goes to the distributor in the first weeks; snacks pay the cinema's bills."),
    ), last_month=("Which film did I see at the cinema last month?", "What movie did I watch in the cinema last "
                   "month?"),
        latest=("What's the last film I saw at the cinema?", "Which movie did I see most recently?"),
        earliest=("Which was the first film I mentioned seeing at the cinema?",)),
    Outing("summit", "peak", said=(
        ("Hiked up {x} today! Clouds at the top but worth it. Which of the big walks should I do next?",
         "Pick one a little longer with a similar ascent, and check the forecast the day before."),
        ("Summited {x} this morning, got up at 5am for it. How do I stop my knees aching on the descent?",
         "Poles help a lot, as do shorter steps and strengthening your quads during the week."),
    ), last_month=("Which mountain did I climb last month?", "What peak did I summit last month?"),
        latest=("What's the last mountain I went up?", "Which summit did I reach most recently?"),
        earliest=("Which mountain did I climb first?",)),
)

RELATIVE = ((7, "a week ago"), (10, "ten days ago"), (14, "two weeks ago"), (21, "three weeks ago"),
            (30, "a month ago"), (60, "two months ago"))
RELATIVE_ASKED = ("What did I do {ago}?", "What was I up to {ago}?", "Remind me what I did {ago}.")
DAYS_AGO_ASKED = ("How many days ago did I {do}?", "How long ago did I {do}?", "How many weeks ago "
                  "did I {do}?")
ORDER_ASKED = ("Which did I do first, {a} or {b}?", "Which came first: {a} or {b}?", "Did {a} happen before or "
               "after {b}?")

# Everyday personal chatter: the facts' vocabulary, none of the user's facts.
PERSONAL = (
    ("Can you give me a recipe for {dish} for six people? It's for my {rel}'s birthday.",
     "Here's a version for six with a make-ahead step, so you're not stuck in the kitchen when guests arrive. "
     "Brown the meat in batches, soften the vegetables, deglaze, then let it simmer low and slow for two hours."),
    ("What's the weather usually like in {city} in {monthname}?",
     "Mild on average, with a fair chance of rain; pack a layer for the evenings and check the forecast a few days "
     "ahead."),
    ("Help me write a polite email to my landlord about the heating being broken for a week.",
     "Dear Mr Hughes, the heating in the flat has not worked since last Monday. Could you arrange a repair this "
     "week? I'm home most mornings to let someone in. Thank you."),
    ("My colleague {name} is moving to {city}; what's a good leaving gift from the team?",
     "A guidebook with notes from each of you about places to try, or a nice bag for the move."),
    ("Explain compound interest with a simple example.",
     "Put 1,000 in at 5% a year: after a year you have 1,050, and the next year's interest is on 1,050, not 1,000. "
     "Over twenty years that snowballs to about 2,650."),
    ("Translate 'where is the train station?' into Portuguese, Spanish and Italian.",
     "Portuguese: Onde fica a estação de comboios? Spanish: ¿Dónde está la estación de tren? Italian: Dov'è la "
     "stazione dei treni?"),
    ("Is a standing desk worth it? Summarise the pros and cons.",
     "Pros: variety of posture, can help with back pain. Cons: standing all day isn't healthy either, and good ones "
     "cost a lot. Alternate, don't stand all day."),
    ("How do I get red wine out of a carpet?",
     "Blot, don't rub; then cold water and a little washing-up liquid, blotting again. Salt or baking soda can help "
     "draw it out."),
    ("Plan a three-day itinerary in {city} for my parents' anniversary trip. They like food and walking.",
     "Day one: old town walk and a long lunch; day two: a market in the morning and a museum; day three: a day trip "
     "out of the city and a nice dinner to finish."),
    ("Recommend a board game for four adults who like strategy but hate long rules explanations.",
     "Try something with a fifteen-minute teach and lots of decisions: a tile-laying or engine-building game."),
    ("My {rel} keeps getting scam texts. How do I set their phone up to filter them?",
     "Turn on the spam filter in the messages app, block unknown senders from links, and tell them no bank ever "
     "asks for a code by text."),
    ("Suggest a name for a Slack channel about {topic} for the engineering team.",
     "Something plain that says what it is about works best, or keep it short, like #learning."),
    ("What's a good beginner houseplant for a dark bathroom?",
     "A ZZ plant or a cast iron plant; both tolerate low light and humidity."),
    ("My friend {name} lost her dog in the park; how do I make an effective missing-pet poster?",
     "A big clear photo, the name, where and when it was lost, and a phone number in large type."),
    ("What should I ask a mortgage adviser at the first meeting?",
     "How much you can borrow, the fees, fixed versus variable, and what happens if rates rise."),
    ("My {rel} wants to start running at 60. How should they begin?",
     "Walk-run intervals three times a week, good shoes, and a check with their doctor first."),
    ("Any ideas for a team social that isn't going to the pub?",
     "A cooking class, a quiz, crazy golf, or a walk followed by lunch."),
    ("How do I politely decline a wedding invitation from a colleague?",
     "Thank them warmly, say you can't make it without a long explanation, and send a card or small gift."),
)

CODE = (
    ("Write a Python function that groups {record} by month and sums the amounts. Rows are dicts with 'date' "
     "and 'amount'.",
     "```python\nfrom collections import defaultdict\nfrom datetime import date\n\n\ndef monthly_totals(rows):\n"
     "    totals = defaultdict(float)\n    for row in rows:\n        day: date = row['date']\n"
     "        totals[day.year, day.month] += row['amount']\n    return dict(sorted(totals.items()))\n```\n"
     "Each key is (year, month); the sort keeps the months in order."),
    ("How do I read a CSV with pandas and drop the rows where the email column is empty?",
     "```python\nimport pandas as pd\n\ndf = pd.read_csv('customers.csv')\n"
     "df = df[df['email'].notna() & (df['email'].str.strip() != '')]\n```\n"
     "The second condition also drops emails that are only spaces."),
    ("SQL: the top five customers by total {record} this year.",
     "```sql\nSELECT customer_id, SUM(amount) AS total\nFROM {record}\n"
     "WHERE created_at >= date_trunc('year', now())\nGROUP BY customer_id\nORDER BY total DESC\nLIMIT 5;\n```"),
    ("Write a bash script that backs up ~/photos to an external drive every night and keeps a log.",
     "```bash\n#!/usr/bin/env bash\nset -euo pipefail\nrsync -a --delete ~/photos/ /media/backup/photos/ "
     ">> ~/backup.log 2>&1\necho \"$(date -Is) done\" >> ~/backup.log\n```\n"
     "Schedule it with `crontab -e`: `0 2 * * * ~/bin/backup.sh`."),
    ("Give me a regex for UK postcodes and a pytest test for it.",
     "```python\nimport re\n\nPOSTCODE = re.compile(r'^[A-Z]{{1,2}}\\d[A-Z\\d]? ?\\d[A-Z]{{2}}$', re.I)\n\n\n"
     "def test_postcodes():\n    assert POSTCODE.match('SW1A 1AA')\n    assert not POSTCODE.match('12345')\n```"),
    ("The {service} tests fail with 'connection refused' in CI but pass locally. Where do I start?",
     "CI probably starts the tests before the database container is ready. Add a wait-for step (poll the port "
     "until it answers), or a healthcheck in the compose file that the test job depends on."),
    ("Refactor this to avoid the N+1 query: `for order in orders: print(order.customer.name)`",
     "```python\norders = Order.objects.select_related('customer')\nfor order in orders:\n"
     "    print(order.customer.name)\n```\nselect_related joins the customers in the same query."),
    ("How do I make a Python dataclass immutable and hashable?",
     "```python\nfrom dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Point:\n    x: float\n"
     "    y: float\n```\nfrozen=True makes instances read-only and gives them a hash from their fields."),
)

# What dresses a turn up as people write and answer: asides of no fact, and the
# elaboration an assistant adds (turns of a few hundred characters, as in real chats).
OPENERS = ("", "", "", "Okay, different topic. ", "Quick question. ", "Morning! ", "Hey, me again. ",
           "Random one for you. ")
ASIDES = ("", "", "Keep it brief, I'm between calls.", "I've been going back and forth on this for a while.",
          "No rush, just curious what you think.", "Assume I know the basics.", "I'd rather not spend much on it.",
          "Bullet points are fine.", "Be honest, I can take it.", "I only have ten minutes before I need to leave.")
ELABORATIONS = ("The main thing is to start small and adjust once you see how it goes.",
                "It's worth writing down what you try, so you can compare later instead of relying on memory.",
                "Most people overthink this part; a simple version done consistently beats a perfect plan.",
                "If cost matters, the mid-range option is usually the best value for money.",
                "Check the details against your own situation, since the usual advice assumes an average case.",
                "Give it a couple of weeks before judging; the first few days are rarely representative.",
                "If anything here doesn't fit, tell me what constraints you have and I'll adjust it.",
                "One caveat: local rules and prices vary, so double-check anything that involves money or "
                "contracts.")
FOLLOW_UPS = ("Happy to go into more detail on any of these.", "Let me know if you want a shorter version.",
              "If you tell me more about your situation I can tailor this.", "Want me to turn this into a checklist?",
              "I can also suggest alternatives if none of these fit.", "")


@dataclass
class Pending:
    """A question whose evidence is known once its sessions are written."""

    type: str
    kind: str
    text: str
    answer: list[str]
    evidence: list[corpus.Statement]
    as_of: datetime | None = None  # None: the history's asking time


class History:
    """One person's sessions, planned turn by turn, then written; and the questions about them."""

    def __init__(self, rng: random.Random, root: Path, name: str, index: int, sessions: int):
        self.rng, self.root, self.name = rng, root / name, name
        first = FIRST_DAY + timedelta(days=41 * index)
        days = sorted(rng.sample(range(SPAN_DAYS), min(sessions, SPAN_DAYS)))
        self.days = [first + timedelta(days=d) for d in days]
        # Evenings: what a user says happened "today" or "this morning" has, by then.
        self.starts = [d + timedelta(hours=rng.randint(17, 21), minutes=rng.randint(0, 59)) for d in self.days]
        self.plans: list[list[corpus.Turn]] = [[] for _ in days]
        self.taken: dict[str, set[str]] = {}  # values the user's own facts hold, per pool
        self.pending: list[Pending] = []

    # --- drawing -------------------------------------------------------------------

    def take(self, pool: str, count: int = 1) -> list[str]:
        """Values of ``pool`` no fact of the user holds yet; now taken."""
        free = [v for v in POOLS[pool] if v not in self.taken.setdefault(pool, set())]
        chosen = self.rng.sample(free, count)
        self.taken[pool].update(chosen)
        return chosen

    def names(self, **given: str) -> dict[str, str]:
        """A value for every placeholder, none a value the user's facts hold (for
        distractors), with ``given`` on top."""
        drawn = {pool: self.rng.choice([v for v in values if v not in self.taken.get(pool, ())] or values)
                 for pool, values in POOLS.items()}
        return {**drawn, **given}

    def say(self, session: int, template: tuple[str, str], names: dict[str, str],
            statement: bool = True) -> corpus.Statement | None:
        user, assistant = self.dressed(*(part.format(**names) for part in template))
        said = corpus.Statement(user) if statement else None
        self.plans[session].append(corpus.Turn(user, assistant, said))
        return said

    def dressed(self, user: str, assistant: str) -> tuple[str, str]:
        """The turn as written: an opener and an aside around the user's words, an
        elaboration or two and a follow-up after the reply."""
        user = f"{self.rng.choice(OPENERS)}{corpus.capitalised(user)} {self.rng.choice(ASIDES)}".strip()
        more = self.rng.sample(ELABORATIONS, self.rng.choice([0, 1, 1, 2]))
        return user, " ".join([assistant, *more, self.rng.choice(FOLLOW_UPS)]).strip()

    def sessions(self, count: int, among: list[int] | None = None) -> list[int]:
        return sorted(self.rng.sample(among if among is not None else range(len(self.plans)), count))

    def near(self, templates: Said, pool: str | None = None) -> None:
        """One or two distractors: the kind's words in other roles, in any sessions; {x}
        and {y}, values of ``pool`` the user's facts do not hold."""
        for template in self.rng.sample(templates, min(len(templates), self.rng.choice([1, 1, 2]))):
            names = self.names()
            if pool is not None:
                names["x"], names["y"] = self.rng.sample([v for v in POOLS[pool] if v not in self.taken[pool]], 2)
            self.say(self.rng.randrange(len(self.plans)), template, names, statement=False)

    def ask(self, type_: str, kind: str, template: str, names: dict[str, str], answer: list[str],
            evidence: list[corpus.Statement], as_of: datetime | None = None) -> None:
        self.pending.append(Pending(type_, kind, corpus.capitalised(template.format(**names)), answer, evidence,
                                    as_of))

    # --- the five types --------------------------------------------------------------

    def single(self, detail: Detail) -> None:
        names = self.names()
        for pool in dict.fromkeys((detail.answer, "name", "kid")):  # the answer, and the people it names: the user's own
            if pool == detail.answer or "{" + pool + "}" in str(detail.said):
                names[pool] = self.take(pool)[0]
        [session] = self.sessions(1)
        said = self.say(session, self.rng.choice(detail.said), names)
        self.ask("single-session", detail.key, self.rng.choice(detail.asked), names, [names[detail.answer]], [said])
        self.near(detail.near)

    def multi(self, series: Series) -> None:
        count = min(self.rng.choice([2, 3, 3, 4]), len(self.plans))
        items = self.take(series.pool, count)
        said = [self.say(session, self.rng.choice(series.said), self.names(x=item))
                for session, item in zip(self.sessions(count), items)]
        self.ask("multi-session", series.key, self.rng.choice(series.asked), self.names(), items, said)
        self.near(series.near, series.pool)

    def preference(self, preference: Preference) -> None:
        word, phrase = self.rng.choice(preference.options)
        [session] = self.sessions(1)
        said = self.say(session, self.rng.choice(preference.said), self.names(phrase=phrase))
        self.ask("preference", preference.key, self.rng.choice(preference.asked), self.names(), [word], [said])
        self.near(preference.near)

    def update(self, update: Update) -> None:
        old, new = self.take(update.pool, 2)
        if update.ordered:
            old, new = sorted((old, new), key=POOLS[update.pool].index)
        before, after = self.rng.choice([1, 1, 2]), self.rng.choice([0, 0, 1])
        count = min(before + 1 + after, len(self.plans))
        chosen = self.sessions(count)
        changed = min(before, count - 1)  # which of them says the change
        latest = []
        for order, session in enumerate(chosen):
            if order < changed:
                self.say(session, self.rng.choice(update.first if order == 0 else update.again), self.names(v=old))
            elif order == changed:
                latest.append(self.say(session, self.rng.choice(update.change), self.names(old=old, new=new)))
            else:
                latest.append(self.say(session, self.rng.choice(update.again), self.names(v=new)))
        self.ask("knowledge-update", update.key, self.rng.choice(update.asked), self.names(), [new], latest)
        self.near(update.near, update.pool)

    def temporal(self, count: int) -> None:
        """``count`` questions: days since an event, which of two came first, what happened
        some weeks before the asking time, and outings' last month's, latest and earliest."""
        events = iter(self.rng.sample(EVENTS, len(EVENTS)))
        outings = iter(self.rng.sample(OUTINGS, len(OUTINGS)))
        last = self.days[-1]
        forms = ["relative", "relative", "last month", "latest", "earliest", "days ago", "order", "days ago",
                 "order", "days ago", "order"]
        forms = (forms * (count // len(forms) + 1))[:count]
        recent = [s for s, day in enumerate(self.days) if (last - day).days < RELATIVE[-1][0]][-6:]
        for form in forms:
            if form == "relative" and recent:
                session = recent.pop(self.rng.randrange(len(recent)))
                gap, ago = self.rng.choice([(g, words) for g, words in RELATIVE
                                            if self.days[session] + timedelta(days=g) > last])
                event = next(events)
                said = self.say(session, self.rng.choice(event.said), self.names())
                self.ask("temporal-reasoning", "relative", self.rng.choice(RELATIVE_ASKED), {"ago": ago},
                         list(event.answer), [said], as_of=self.days[session] + timedelta(days=gap, hours=18))
            elif form in ("last month", "latest", "earliest") and self.outing(form, next(outings)):
                pass
            elif form == "order" and len(self.plans) > 1:
                first, second = next(events), next(events)
                said = [self.say(session, self.rng.choice(event.said), self.names())
                        for session, event in zip(self.sessions(2), (first, second))]
                a, b = (first, second) if self.rng.random() < 0.5 else (second, first)
                self.ask("temporal-reasoning", "order", self.rng.choice(ORDER_ASKED), {"a": a.noun, "b": b.noun},
                         [*first.answer, *second.answer], said)
            else:
                event = next(events)
                [session] = self.sessions(1)
                said = self.say(session, self.rng.choice(event.said), self.names())
                self.ask("temporal-reasoning", "days ago", self.rng.choice(DAYS_AGO_ASKED), {"do": event.do},
                         list(event.answer), [said])

    def outing(self, form: str, outing: Outing) -> bool:
        """Three outings of a kind in three sessions; the question about one of them. Last
        month's needs one in the month before an asking time after the last session, and
        none other that month; False when no session allows it."""
        count = min(3, len(self.plans))
        as_of = None
        if form == "last month":
            last = self.days[-1]
            months = {(last.year, last.month), ((last - timedelta(days=last.day)).year,
                                                (last - timedelta(days=last.day)).month)}
            inside = [s for s, day in enumerate(self.days) if (day.year, day.month) in months]
            if not inside:
                return False
            chosen = inside[self.rng.randrange(len(inside))]
            month = self.days[chosen].replace(day=1)
            following = (month + timedelta(days=32)).replace(day=1)
            after = (following + timedelta(days=32)).replace(day=1)
            asking = [following + timedelta(days=d) for d in range((after - following).days)
                      if following + timedelta(days=d) > last]
            others = [s for s, day in enumerate(self.days) if day < month]
            if not asking or len(others) < count - 1:
                return False
            as_of = self.rng.choice(asking) + timedelta(hours=self.rng.randint(8, 20))
            sessions = sorted([chosen, *self.rng.sample(others, count - 1)])
            evidence_at = sessions.index(chosen)
        else:
            sessions = self.sessions(count)
            evidence_at = -1 if form == "latest" else 0
        items = self.take(outing.pool, count)
        said = [self.say(session, self.rng.choice(outing.said), self.names(x=item))
                for session, item in zip(sessions, items)]
        asked = {"last month": outing.last_month, "latest": outing.latest, "earliest": outing.earliest}[form]
        self.ask("temporal-reasoning", form, self.rng.choice(asked), {}, [items[evidence_at]], [said[evidence_at]],
                 as_of)
        return True

    # --- writing -----------------------------------------------------------------------

    def fill(self, session: int) -> None:
        """Chatter around what the session says: personal, coding, and code."""
        wanted = self.rng.randint(5, 9)
        for _ in range(max(2, wanted - len(self.plans[session]))):
            roll = self.rng.random()
            if roll < 0.4:
                self.say(session, self.rng.choice(PERSONAL), self.names(), statement=False)
            elif roll < 0.75:
                self.plans[session].append(corpus.Turn(*self.dressed(*corpus.chatter(self.rng))))
            else:
                self.say(session, self.rng.choice(CODE), self.names(), statement=False)

    def write(self) -> list[dict]:
        for detail in self.rng.sample(DETAILS, min(PER_TYPE, len(DETAILS))):
            self.single(detail)
        for series in self.rng.sample(SERIES, min(PER_TYPE, len(SERIES))):
            self.multi(series)
        for preference in self.rng.sample(PREFERENCES, min(PER_TYPE, len(PREFERENCES))):
            self.preference(preference)
        for update in self.rng.sample(UPDATES, min(PER_TYPE, len(UPDATES))):
            self.update(update)
        self.temporal(PER_TYPE)
        ended = FIRST_DAY
        for session, (started, plan) in enumerate(zip(self.starts, self.plans)):
            self.fill(session)
            self.rng.shuffle(plan)
            ended = corpus.write_session(self.root, self.rng, max(started, ended), plan)
        asked_at = (ended + timedelta(days=self.rng.randint(2, 9))).replace(hour=12, minute=0, second=0,
                                                                            microsecond=0)
        questions = []
        for pending in self.pending:
            as_of = pending.as_of or asked_at
            assert as_of > ended, (self.name, pending.text)
            evidence = list(dict.fromkeys(s.where[0] for s in pending.evidence))
            questions.append({"history": self.name, "question": pending.text, "type": pending.type,
                              "kind": pending.kind, "as_of": as_of.strftime("%Y-%m-%dT%H:%M:%SZ"),
                              "answer": pending.answer, "evidence": evidence,
                              "evidence_turns": [list(s.where) for s in pending.evidence]})
        return questions


def write_histories(out_dir: Path, seed: int = 0, histories: int = 4, sessions: int = 60) -> list[dict]:
    """Write ``histories`` folders of ``sessions`` sessions each under ``out_dir``; return
    the questions about them (evidence relative to each history's folder)."""
    rng = random.Random(seed)
    questions = []
    for index in range(histories):
        questions += History(rng, Path(out_dir), f"history-{index}", index, sessions).write()
    return questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--histories", type=int, default=4)
    parser.add_argument("--sessions", type=int, default=60)
    args = parser.parse_args()
    questions = write_histories(args.out, args.seed, args.histories, args.sessions)
    with open(args.out / "questions.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in questions)
    print(f"{args.histories} histories of {args.sessions} sessions and {len(questions)} questions in {args.out}")


if __name__ == "__main__":
    main()
