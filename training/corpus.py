"""The speech corpus for training and testing the small recogniser: seeded sentences, speech
rendered on this machine by espeak-ng and flite, augmentation, and a shard writer.

    python3 -m training.corpus --out DIR --split train --count 5000 --seed 1 --workers 2
    python3 -m training.corpus --out DIR --split test --count 500 --seed 1 --condition noise10db
    python3 -m training.corpus --out DIR --split train --count 3000 --seed 3 --condition pauses
    python3 -m training.corpus --out DIR --split train --count 4000 --seed 4 --condition formant
    python3 -m training.corpus --out DIR --split train --count 4000 --seed 5 --condition noisy
    python3 -m training.corpus --out DIR --split train --count 6000 --seed 7 --condition formant_fast
    python3 -m training.corpus --out DIR --split train --count 6000 --seed 9 --condition clustergen

What the model learns from and what it is judged on are kept apart twice:
  sentences  a stable hash of the text puts TEST_SHARE of all distinct sentences in the test
             split (`sentence_split`); train draws only train sentences, test only test ones.
  voices     whole voices are held out (`voices("test")`): flite rms and slt, every
             espeak-ng variant on the en-gb-scotland accent, and the variants in
             ESPEAK_VARIANTS_TEST on every accent.
Transcripts are lower case words [a-z'] separated by single spaces, numbers spelled out, exactly
what the TTS says ("am"/"pm" are the time suffixes only, spoken "a.m."/"p.m.").

Every utterance depends only on (split, seed, index) (and the condition for test), so the same
arguments give byte-identical output whatever the worker count.

Writer output (DIR):
  shard-00000.npy ...  int16 mono 16 kHz, utterances concatenated (np.load(p, mmap_mode="r"))
  manifest.jsonl       per utterance: id, text, voice, tts, augmentations, seconds, shard,
                       offset, samples; audio = shard[offset:offset + samples] / 32768
  info.json            the arguments, the voice split and tool versions
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import random
import re
import subprocess
import sys
import tempfile
import time
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
from scipy import signal

from engine.audio import parse_wav

SR = 16000                      # every array this module returns: float32 mono at 16 kHz
TEST_SHARE = 0.10               # share of distinct sentences held out for test
REF_DBFS = -23.0                # RMS level every rendering is normalised to before augmentation
PEAK = 0.99                     # no output sample exceeds this (int16 conversion never clips)
SPLITS = ("train", "test")
TEST_CONDITIONS = ("clean", "noise10db")
TRAIN_CONDITIONS = (None, "by_words", "pauses", "formant", "noisy", "formant_fast",
                    "clustergen", "runon")  # None: one sentence per utterance
NOISY_SNR_DB = (5.0, 15.0)      # the "noisy" condition: noise always, around the 10 dB test SNR
NOISE_KINDS = ("white", "pink", "brown", "babble")

# ---------------------------------------------------------------------------------------------
# Numbers as words (what the TTS says for them)

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen").split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
ORDINAL_ONES = ("zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
                "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth "
                "nineteenth").split()
ORDINAL_TENS = "_ _ twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth".split()


def number_words(n: int, british_and: bool = False) -> str:
    """0 <= n < 1e6 -> "one hundred (and) five", "twenty one", "two thousand ten"."""
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else " " + ONES[n % 10])
    if n < 1000:
        head, rest = ONES[n // 100] + " hundred", n % 100
    else:
        head, rest = number_words(n // 1000, british_and) + " thousand", n % 1000
    if rest == 0:
        return head
    joiner = " and " if british_and and rest < 100 else " "
    return head + joiner + number_words(rest, british_and)


def ordinal_words(n: int) -> str:
    """1 <= n < 100 -> "first", "twenty third", "thirtieth"."""
    if n < 20:
        return ORDINAL_ONES[n]
    if n % 10 == 0:
        return ORDINAL_TENS[n // 10]
    return TENS[n // 10] + " " + ORDINAL_ONES[n % 10]


def year_words(y: int) -> str:
    """1900..2099 as said: "nineteen eighty four", "two thousand five", "twenty twenty six"."""
    if 2000 <= y < 2010:
        return number_words(y)
    hi, lo = divmod(y, 100)
    tail = "hundred" if lo == 0 else (f"oh {ONES[lo]}" if lo < 10 else number_words(lo))
    return number_words(hi) + " " + tail


# ---------------------------------------------------------------------------------------------
# Slot values. Templates name slots in braces; a value may itself hold slots (expanded too).

MONTHS = ("january february march april may june july august september october november "
          "december").split()
MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()


def _minute_words(m: int) -> str:
    return "oh " + ONES[m] if m < 10 else number_words(m)


def time_words(r: random.Random) -> str:
    """A clock time as people say it: "seven thirty pm", "quarter to eight", "noon"."""
    h, style = r.randint(1, 12), r.random()
    hw, next_h = number_words(h), number_words(h % 12 + 1)
    if style < 0.05:
        return r.choice(("noon", "midnight", "midday"))
    if style < 0.30:
        core = f"{hw} o'clock"
    elif style < 0.50:
        core = hw + " " + _minute_words(r.choice((15, 30, 45)))
    elif style < 0.70:
        core = hw + " " + _minute_words(r.randint(1, 59))
    elif style < 0.85:
        core = r.choice(("quarter past ", "half past ", "ten past ", "five past ", "twenty past ")) + hw
    else:
        core = r.choice(("quarter to ", "ten to ", "five to ", "twenty to ")) + next_h
    return core + r.choice(("", "", "", " am", " pm", " pm", " in the morning", " in the evening",
                            " in the afternoon", " at night"))


def duration_words(r: random.Random) -> str:
    """A span of time: "twenty five minutes", "an hour and a half", "ninety seconds"."""
    k = r.random()
    if k < 0.45:
        n = r.randint(1, 90)
        return "one minute" if n == 1 else number_words(n) + " minutes"
    if k < 0.60:
        return number_words(r.choice((10, 15, 20, 30, 40, 45, 50, 60, 90))) + " seconds"
    if k < 0.75:
        return r.choice(("an hour", "half an hour", "an hour and a half", "a minute",
                         "a couple of minutes", "a few minutes", "two and a half hours"))
    if k < 0.88:
        return number_words(r.randint(2, 12)) + " hours"
    h, m = r.randint(1, 3), r.choice((5, 10, 15, 20, 30, 45))
    return ("one hour" if h == 1 else number_words(h) + " hours") + f" and {number_words(m)} minutes"


def date_words(r: random.Random) -> str:
    """A calendar date: "march third", "the twenty first of june"."""
    m = r.randrange(12)
    d = ordinal_words(r.randint(1, MONTH_DAYS[m]))
    return f"{MONTHS[m]} {d}" if r.random() < 0.6 else f"the {d} of {MONTHS[m]}"


def money_words(r: random.Random) -> str:
    """A price: "twelve dollars and fifty cents", "four pounds ninety nine"."""
    n, c = r.randint(1, 300), r.choice((0, 0, 5, 10, 20, 25, 49, 50, 75, 95, 99))
    unit = r.choice(("dollars", "pounds", "euros"))
    if n == 1:
        unit = unit[:-1]
    if c == 0:
        return f"{number_words(n, r.random() < 0.3)} {unit}"
    if unit.startswith("pound") and r.random() < 0.5:
        return f"{number_words(n)} {unit} {number_words(c)}"
    cents = "pence" if unit.startswith("pound") else "cents"
    return f"{number_words(n)} {unit} and {number_words(c)} {cents}"


def _n(lo: int, hi: int, fmt: str = "{}", british: float = 0.0):
    """A slot drawing an integer in [lo, hi] and saying it in `fmt`."""
    return lambda r: fmt.format(number_words(r.randint(lo, hi), r.random() < british))


SLOTS = {
    # numbers and times
    "time": time_words, "duration": duration_words, "date": date_words, "money": money_words,
    "year": lambda r: year_words(r.randint(1950, 2030)),
    "ordinal_floor": lambda r: ordinal_words(r.randint(1, 30)),
    "percent": _n(5, 100, "{} percent"),
    "temperature": lambda r: number_words(r.randint(14, 28))
    + r.choice((" degrees", " degrees", " point five degrees")),
    "oven_temp": lambda r: number_words(r.randrange(150, 260, 10), r.random() < 0.4) + " degrees",
    "volume": _n(1, 10), "small_number": _n(2, 5), "number_small": _n(2, 20),
    "number_med": _n(10, 999, british=0.3), "count": _n(2, 40),
    # the home
    "room": ["kitchen", "living room", "bedroom", "bathroom", "office", "hallway", "garage",
             "dining room", "nursery", "basement", "attic", "guest room", "laundry room", "porch",
             "garden", "study", "playroom", "kids room", "master bedroom", "front room",
             "back bedroom", "landing", "conservatory", "den", "utility room", "loft"],
    "device": ["fan", "heater", "air conditioner", "tv", "television", "radio", "coffee machine",
               "kettle", "lamp", "desk lamp", "floor lamp", "speaker", "printer", "sprinkler",
               "porch light", "fairy lights", "electric blanket", "towel rail", "fireplace",
               "projector", "humidifier", "air purifier", "night light", "ceiling fan",
               "christmas lights", "hot tub", "pool pump", "extractor fan"],
    "appliance": ["dishwasher", "washing machine", "dryer", "robot vacuum", "oven", "microwave",
                  "slow cooker", "bread maker", "tumble dryer", "coffee maker"],
    "color": ["red", "blue", "green", "warm white", "cool white", "yellow", "orange", "purple",
              "pink", "daylight", "soft white", "candle light", "sky blue", "turquoise"],
    "food": ["pasta", "rice", "eggs", "pizza", "cake", "bread", "chicken", "potatoes", "tea",
             "cookies", "roast", "soup", "laundry", "oven", "muffins", "vegetables", "noodles"],
    # people and places
    "name": ["anna", "ben", "carlos", "diana", "emma", "frank", "grace", "henry", "isabel",
             "jack", "kate", "liam", "maria", "noah", "olivia", "peter", "rachel", "sam", "tom",
             "victor", "william", "zoe", "mum", "mom", "dad", "grandma", "grandpa", "lucy",
             "david", "sarah", "james", "laura", "michael", "sophie", "daniel", "chloe",
             "matthew", "hannah", "oscar", "ruby", "leo", "mia", "ethan", "alice", "george",
             "jessica", "mark", "helen", "robert", "nina", "paul", "julia", "adam", "ella",
             "simon", "claire", "aunt susan", "uncle joe", "the office", "the doctor",
             "the school", "priya", "mohammed", "wei", "fatima", "kenji", "sofia", "omar"],
    "city": ["london", "paris", "new york", "chicago", "boston", "seattle", "toronto", "sydney",
             "berlin", "madrid", "rome", "tokyo", "dublin", "edinburgh", "manchester", "glasgow",
             "cardiff", "denver", "austin", "miami", "atlanta", "dallas", "houston", "phoenix",
             "vancouver", "montreal", "lisbon", "amsterdam", "vienna", "prague", "oslo",
             "stockholm", "copenhagen", "athens", "cairo", "mumbai", "delhi", "singapore",
             "hong kong", "mexico city", "los angeles", "san francisco", "melbourne", "auckland",
             "leeds", "bristol", "brighton", "york", "oxford", "cambridge"],
    "place": ["station", "airport", "library", "supermarket", "pharmacy", "bakery", "bank",
              "post office", "gym", "park", "cinema", "hospital", "school", "office",
              "coffee shop", "restaurant", "pub", "beach", "museum", "swimming pool",
              "bus stop", "garden centre", "hardware store", "petrol station", "gas station",
              "market", "dentist", "hairdresser", "town hall", "playground", "stadium"],
    "shop": ["pharmacy", "petrol station", "gas station", "supermarket", "coffee shop",
             "cash machine", "bakery", "hardware store", "charging station", "bike shop"],
    "relative": ["sister", "brother", "mother", "father", "aunt", "uncle", "cousin", "grandmother",
                 "grandfather", "daughter", "son", "wife", "husband", "neighbour", "boss",
                 "best friend", "niece", "nephew", "partner", "flatmate", "colleague"],
    # errands and things
    "task": ["call the dentist", "pay the rent", "water the plants", "take out the bins",
             "take out the trash", "feed the cat", "walk the dog", "buy milk",
             "pick up the kids", "book a table", "send the invoice", "charge my phone",
             "take my medicine", "check the oven", "move the car", "email the landlord",
             "renew my passport", "back up the laptop", "return the library books",
             "pick up the dry cleaning", "call {name}", "text {name} back",
             "order a birthday cake", "cancel the gym membership", "fill up the car",
             "lock the back door", "bring the washing in", "clean the fridge",
             "book the flights", "pack my lunch", "drink some water", "check the post",
             "print the tickets", "pay the electricity bill", "wish {name} a happy birthday",
             "buy a present for {name}", "practise the piano", "do the laundry",
             "vacuum the stairs", "make a doctor's appointment", "defrost the chicken",
             "put the bins out", "collect the parcel", "call my {relative}",
             "send {name} the photos", "book a haircut", "change the bed sheets"],
    "grocery": ["milk", "eggs", "bread", "butter", "cheese", "apples", "bananas", "oranges",
                "tomatoes", "potatoes", "onions", "garlic", "carrots", "rice", "pasta",
                "coffee", "tea bags", "sugar", "flour", "olive oil", "yoghurt", "chicken",
                "salmon", "orange juice", "cereal", "peanut butter", "strawberries",
                "toilet paper", "washing up liquid", "dog food", "cat food", "batteries",
                "lemons", "spinach", "mushrooms", "peppers", "biscuits", "chocolate",
                "ice cream", "sparkling water", "honey", "oat milk", "avocados", "grapes",
                "frozen peas", "crisps", "bin bags", "light bulbs", "shampoo", "toothpaste"],
    "grocery_quantity": ["{count} {grocery}", "a bag of {grocery}", "two bottles of {grocery}",
                         "a box of {grocery}", "some {grocery}", "a jar of {grocery}",
                         "half a dozen eggs", "a dozen eggs", "a loaf of bread",
                         "a pint of milk", "{count} cans of {grocery}"],
    "genre": ["some jazz", "jazz", "classical music", "rock music", "some pop music", "hip hop",
              "country music", "blues", "reggae", "folk music", "soul music", "some funk",
              "electronic music", "ambient music", "piano music", "soft rock", "indie music",
              "heavy metal", "latin music", "opera", "the radio", "my workout playlist",
              "something relaxing", "christmas music", "my favourites", "the news",
              "my running playlist", "some nineties music", "eighties hits", "white noise",
              "rain sounds", "my podcast", "an audiobook", "songs for kids", "lullabies"],
    "event": ["dentist appointment", "meeting", "team meeting", "doctor's appointment",
              "haircut", "lunch with {name}", "dinner with {name}", "yoga class",
              "football practice", "piano lesson", "parents evening", "job interview",
              "flight", "train", "car service", "book club", "date night", "school run",
              "birthday party", "video call", "coffee with {name}", "swimming lesson"],
    "meal": ["breakfast", "lunch", "dinner", "tea", "supper", "brunch", "pizza", "curry",
             "a barbecue", "pancakes", "a roast", "tacos", "sushi", "fish and chips"],
    "unit_pair": ["grams are in a pound", "ounces are in a pound", "centimetres are in an inch",
                  "inches are in a foot", "feet are in a mile", "metres are in a mile",
                  "millilitres are in a cup", "cups are in a litre", "seconds are in an hour",
                  "minutes are in a day", "days are in a year", "weeks are in a year",
                  "kilometres are in a mile", "teaspoons are in a tablespoon"],
    "day": ["today", "tomorrow", "tonight", "this evening", "this afternoon", "tomorrow morning",
            "tomorrow night", "on monday", "on tuesday", "on wednesday", "on thursday",
            "on friday", "on saturday", "on sunday", "next week", "this weekend",
            "the day after tomorrow", "next {weekday}", "on {date}"],
    "day_past": ["yesterday", "last night", "last week", "on saturday", "this morning",
                 "last weekend", "two days ago", "last {weekday}", "on {date}",
                 "a few weeks ago", "last year", "in {year}"],
    "weekday": WEEKDAYS,
    "part_of_day": ["morning", "afternoon", "evening", "at lunchtime", "first thing",
                    "after work", "after school"],
    "before_when": ["before {time}", "before you leave", "before we go to bed",
                    "before the weekend", "on the way home", "after dinner", "by {weekday}",
                    "tomorrow morning", "tonight"],
    "message": ["i'm on my way", "i'll be {duration} late", "i'm running late",
                "dinner is ready", "i'll be home at {time}", "can you call me back",
                "i'm at the {place}", "the meeting is at {time}", "don't forget the {grocery}",
                "happy birthday", "thanks for today", "see you {day}", "we're outside",
                "i left my keys at home", "the train is delayed", "i'll pick you up at {time}",
                "are you free {day}", "good luck {day}", "call me when you land",
                "i'll meet you at the {place}", "love you"],
    # dictation vocabulary
    "animal": ["dog", "cat", "puppy", "kitten", "rabbit", "hamster", "parrot", "horse",
               "baby", "fox", "squirrel", "goldfish", "tortoise", "old dog", "neighbour's cat"],
    "verb_past": ["slept", "sat", "hid", "waited", "lay", "played", "jumped", "ran", "danced",
                  "sneezed", "napped", "rolled", "stood", "curled up"],
    "prep": ["under", "on", "behind", "next to", "near", "beside", "on top of", "in front of"],
    "furniture": ["table", "sofa", "bed", "chair", "desk", "bookshelf", "piano", "window",
                  "stairs", "fridge", "radiator", "kitchen counter", "front door", "washing machine"],
    "object": ["keys", "phone", "glasses", "wallet", "umbrella", "charger", "headphones",
               "passport", "watch", "jacket", "bag", "notebook", "laptop", "sunglasses",
               "scarf", "gloves", "purse", "remote control", "library card", "car keys",
               "water bottle", "ticket", "black shoes", "blue jumper", "good pen"],
    "thing": ["film", "book", "restaurant", "hotel", "concert", "weather", "coffee", "new job",
              "flat", "house", "car", "game", "show", "holiday", "party", "food", "traffic",
              "view", "lecture", "exam", "match", "train", "beach", "museum"],
    "adjective": ["great", "amazing", "terrible", "lovely", "boring", "brilliant", "fine",
                  "expensive", "cheap", "too small", "really good", "quite nice", "awful",
                  "fantastic", "noisy", "quiet", "busy", "empty", "crowded", "wonderful",
                  "strange", "funny", "beautiful", "freezing", "warm", "ok", "perfect",
                  "disappointing", "better than expected", "a bit slow", "much too long"],
    "weather": ["sunny", "cloudy", "rainy", "windy", "cold", "hot", "foggy", "stormy", "snowy",
                "warm", "mild", "wet", "dry", "freezing", "humid", "chilly"],
    "activity": ["go for a walk", "go to the beach", "see a film", "have a picnic",
                 "visit {name}", "go swimming", "clean the house", "paint the fence",
                 "go shopping", "stay in", "cook something nice", "go camping",
                 "play tennis", "go to the museum", "have a barbecue", "ride our bikes",
                 "work in the garden", "watch the match", "go to the market", "bake a cake"],
    "vehicle": ["bus", "train", "tram", "flight", "taxi", "ferry", "delivery", "plumber"],
    "document": ["report", "slides", "contract", "invoice", "photos", "spreadsheet", "letter",
                 "form", "receipt", "recipe", "address", "notes", "timetable", "minutes"],
    "gift": ["flowers", "card", "chocolates", "book", "lovely present", "scarf", "help",
             "lift", "dinner", "wine", "lovely evening", "advice"],
    "broken": ["broken", "missing", "at the repair shop", "out of battery", "too old",
               "making a strange noise", "not working", "still charging", "in the car"],
    "said": ["said", "thinks", "told me", "mentioned", "heard", "reckons", "wrote"],
    "feeling": ["tired", "happy", "hungry", "cold", "sick", "excited", "nervous", "busy",
                "sorry", "lucky", "bored", "fine", "worried", "ready", "late"],
}

COMMANDS = [
    # lights and devices
    "turn on the {room} lights", "turn off the {room} lights", "turn the {room} lights on",
    "turn the {room} lights off", "switch on the lights in the {room}",
    "switch off the lights in the {room}", "dim the {room} lights to {percent}",
    "set the {room} lights to {percent}", "make the {room} lights {color}",
    "change the lights in the {room} to {color}", "turn on the {device}",
    "turn off the {device} in the {room}", "switch the {device} off", "is the {device} still on",
    "turn on the {device} in the {room} for {duration}", "start the {appliance}",
    "is the {appliance} finished", "turn everything off in the {room}", "lock the front door",
    "is the back door locked", "close the {room} blinds", "open the curtains in the {room}",
    "open the garage door", "start the robot vacuum in the {room}",
    # heating
    "set the {room} thermostat to {temperature}", "set the heating to {temperature}",
    "make it {small_number} degrees warmer in the {room}",
    "turn the heating down by {small_number} degrees", "what's the temperature in the {room}",
    "set the heating to {temperature} at {time}", "preheat the oven to {oven_temp}",
    "set the oven to {oven_temp} for {duration}",
    # timers, alarms, reminders
    "set a timer for {duration}", "set a {duration} timer", "set a timer for {duration} for the {food}",
    "how much time is left on the {food} timer", "cancel the {food} timer",
    "add {duration} to the timer", "wake me up at {time}", "set an alarm for {time}",
    "set an alarm for {time} {day}", "set an alarm for {time} every {weekday}",
    "turn off my {time} alarm", "snooze for {duration}",
    "remind me at {time} on {date} to {task}", "remind me {day} at {time} to {task}",
    "remind me to {task} in {duration}", "remind me to {task} when i get home",
    "remind me on {date} to {task}",
    # calls and messages
    "call {name}", "call {name} on speaker", "video call {name}", "text {name} that {message}",
    "send a message to {name} saying {message}", "tell {name} {message}",
    "read my last message from {name}",
    # music
    "play {genre} in the {room}", "play {genre}", "play {genre} in the {room} at volume {volume}",
    "turn the volume up", "turn it down a bit", "set the volume to {volume}", "skip this {track}",
    "skip to the next {track}", "go back to the last {track}", "repeat this {track}",
    "pause the music in the {room}", "stop the music", "what's this song", "play the next episode",
    "play {genre} for {duration}", "turn the music off in {duration}",
    # information
    "what's the weather like {day} in {city}", "will it rain in {city} {day}",
    "do i need an umbrella {day}", "what's the weather going to be like on {weekday}",
    "what's on my calendar {day}", "add {event} to my calendar on {date} at {time}",
    "move my {event} to {weekday} at {time}", "cancel my {event} on {weekday}",
    "when is my next {event}", "add {grocery_quantity} to the shopping list",
    "add {grocery} to my shopping list", "remove {grocery} from the shopping list",
    "what's on my shopping list", "order more {grocery}", "what's {number_small} times {number_small}",
    "what's {number_med} plus {number_med}", "what's {number_med} divided by {number_small}",
    "how many {unit_pair}", "convert {number_small} {unit} to {unit}", "what time is it in {city}", "how many days until {date}",
    "how long will it take to drive to {city}", "find the nearest {shop}",
    "how far is the {place} from here", "what time does the {place} close {day}",
    "what's the time", "read me the news", "tell me a joke", "good night", "good morning",
    "i'm leaving now", "spell {animal}", "what's the date {day}", "what year was {name} born",
]

DICTATION = [
    "i'll be home by {time}", "i'll be there in {duration}", "i'm running about {duration} late",
    "can you pick up some {grocery} on the way home", "the {event} has been moved to {weekday} {part_of_day}",
    "don't forget to {task} {before_when}", "we're going to {city} {day}",
    "{name} {said} the {thing} was {adjective}", "my {relative} is coming to visit {day}",
    "thanks for the {gift} it was {adjective}", "i think we should {activity} {day}",
    "the {animal} {verb_past} {prep} the {furniture}", "have you seen my {object}",
    "where did i leave my {object}", "did you remember to {task}", "the train leaves at {time}",
    "it costs {money}", "we need {count} more chairs", "{name} and i went to the {place} {day_past}",
    "let's meet at the {place} at {time}", "the {place} closes at {time} on {weekday}s",
    "it was really {weather} {day_past}", "my {object} is {broken}",
    "the {thing} was {adjective} but the {thing} was {adjective}", "please {task} before {time}",
    "i can't find the {object} anywhere", "she bought {grocery_quantity} at the {place}",
    "he said he would be here by {time}", "it's going to be {weather} {day}",
    "the kids have {event} {day}", "we had {meal} at {name}'s house {day_past}",
    "there are {count} people coming to dinner", "my flight lands at {time} on {date}",
    "the meeting room is on the {ordinal_floor} floor", "i was born on {date} {year}",
    "happy birthday {name}", "the {vehicle} was {duration} late this morning",
    "call me back when you get a chance", "see you {day}", "what do you want for {meal}",
    "i'm not sure that's a good idea", "would you like a cup of {drink}",
    "i'll make you a cup of {drink}", "could you send me the {document} by {weekday}",
    "the {document} is on the {furniture} in the {room}", "i left the {object} with {name}",
    "{name}'s {relative} works at the {place}", "we should {activity} this weekend",
    "i'd rather {activity} {day}", "the {object} cost {money}", "the score was {volume} {volume}",
    "it took {duration} to get here", "i'm feeling {feeling} {day}", "are you {feeling}",
    "we've got {count} {grocery} left", "the {thing} starts at {time}",
    "i haven't seen {name} since {day_past}", "the {place} is closed until {date}",
    "my {relative} {said} the {thing} is {adjective}", "she's {feeling} because of the {thing}",
    "they'll be back {day}", "we won't be home until {time}", "could you {task} for me",
    "the rent is {money} a month", "the {animal} is {feeling}", "it's {weather} in {city} {day}",
    "i need to {task} and {task}", "what time is the {event}", "the {event} went {adjective}",
    "don't worry about the {thing}", "it's been {duration} since i {task_past}",
    "we moved here in {year}", "the bus was {adjective} {day_past}",
]
SLOTS["track"] = ["song", "track", "one", "episode", "chapter", "album"]
SLOTS["unit"] = ["grams", "ounces", "pounds", "kilos", "millilitres", "litres", "cups", "pints",
                 "inches", "centimetres", "feet", "metres", "miles", "kilometres", "teaspoons"]
SLOTS["drink"] = ["tea", "coffee", "hot chocolate", "green tea", "decaf"]
SLOTS["task_past"] = ["called {name}", "ate", "slept", "checked", "left", "saw {name}",
                      "spoke to {name}", "went to the {place}", "had {meal}"]

_SLOT = re.compile(r"\{(\w+)\}")
TRANSCRIPT = re.compile(r"[a-z']+( [a-z']+)*")


def fill(r: random.Random, template: str) -> str:
    """Expand every {slot}, left to right, recursively (slot values may name slots)."""
    def value(m):
        v = SLOTS[m.group(1)]
        return fill(r, v(r) if callable(v) else r.choice(v))
    return _SLOT.sub(value, template)


def sentence(r: random.Random) -> str:
    """One transcript: a voice-assistant command (60 %) or a dictation sentence."""
    templates = COMMANDS if r.random() < 0.6 else DICTATION
    text = " ".join(fill(r, r.choice(templates)).split())
    assert TRANSCRIPT.fullmatch(text), text
    return text


def sentence_split(text: str) -> str:
    """"test" for TEST_SHARE of all distinct sentences, else "train": a hash of the text alone,
    so the split does not depend on the seed or on generation order."""
    h = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return "test" if h < TEST_SHARE * 2 ** 64 else "train"


def corpus_sentences(split: str, seed: int, count: int) -> list[str]:
    """`count` sentences of `split`; test sentences are distinct (train ones may repeat)."""
    r = random.Random(f"sentences/{split}/{seed}")
    out, seen = [], set()
    for _ in range(count * 1000 + 1000):
        if len(out) == count:
            return out
        s = sentence(r)
        if sentence_split(s) == split and not (split == "test" and s in seen):
            seen.add(s)
            out.append(s)
    raise RuntimeError(f"could not draw {count} distinct {split} sentences")


def tts_text(text: str) -> str:
    """What the TTS is given for a transcript: the time suffixes are spelled so both engines
    say the letters ("am" alone is read as the word am)."""
    return " ".join({"am": "a.m.", "pm": "p.m."}.get(w, w) for w in text.split())


# ---------------------------------------------------------------------------------------------
# Voices. "espeak-ng:<accent>+<variant>" (no "+" = the accent's default) or "flite:<voice>".

ESPEAK_ACCENTS_TRAIN = ("en-us", "en-gb", "en-gb-x-rp", "en-029", "en-gb-x-gbclan",
                        "en-gb-x-gbcwmd", "en-us-nyc")
ESPEAK_ACCENTS_TEST = ("en-gb-scotland",)
# Variant files (espeak-ng --voices=variant, column File without "!v/"); the novelty ones
# (whisper, robots, Demonic, announcer ...) are left out.
ESPEAK_VARIANTS_TRAIN = ("", "m1", "m2", "m3", "m4", "m6", "m7", "m8", "f1", "f2", "f4", "f5",
                         "klatt", "klatt2", "klatt4", "Alex", "Alicia", "Andy", "Annie", "aunty",
                         "belinda", "david", "edward", "Gene", "Jacky", "john", "linda", "Mike",
                         "max", "norbert", "paul", "quincy", "rob", "shelby", "steph", "travis",
                         "victor", "Lee", "benjamin", "caleb", "adam", "anika", "grandma")
ESPEAK_VARIANTS_TEST = ("f3", "m5", "klatt3", "Andrea", "Michael", "steph2", "grandpa")
# awb_time is a talking clock (it can say only times); kal is the 8 kHz diphone voice.
FLITE_TRAIN = ("kal", "kal16", "awb")
FLITE_TEST = ("rms", "slt")
FLITE_F0 = {"kal": 95.0, "kal16": 95.0, "awb": 130.0, "rms": 102.0, "slt": 172.0}  # median Hz, measured
FLITE_SHARE = 0.35              # share of utterances spoken by flite
# "formant" (train only): the flite training voices are all male, the held-out slt is female
# (the candidate model's WER on slt was 25.5% against 9.7% on rms, 300 clean test utterances).
# Speeding a male voice up by FORMANT_SPEED raises its formants (a shorter vocal tract) and
# its F0 together; flite speaks that much slower first, so the tempo stays, and aims its F0
# at FEMALE_F0 / factor, so the result is in a female pitch range.
FORMANT_SPEED = (1.12, 1.30)
FEMALE_F0 = (150.0, 230.0)
FORMANT_TEMPO = (0.85, 1.2)     # duration_stretch after the speed-up (the plain flite range)
# "formant_fast": the same, spoken faster. slt talks about 10% faster than rms at the same
# duration_stretch (0.40 against 0.44 s per word, test-clean, padding included) and about 20%
# faster than awb, and the small-v8w model's errors on it gathered there: 24.9% WER on the slt
# utterances with stretch < 0.95 against 11.4% on the rest (rms: 4.9 against 6.2). So this
# condition renders the raised voices at 0.65-1.0 of their own tempo, over a slightly wider
# range of formant shifts.
FORMANT_FAST_SPEED = (1.10, 1.35)
FORMANT_FAST_TEMPO = (0.65, 1.0)
# "clustergen": only awb, the one statistical-parametric (clustergen) training voice. The
# held-out rms and slt are clustergen voices too, but awb is only a third of the flite share
# of each corpus (about 12% of the utterances), kal and kal16 being diphone voices. After
# formant_fast, small-v11 read slt better (14.6 -> 10.8%, test-clean) and rms worse (5.9 ->
# 6.4%; 7.2 -> 8.7% on the confirmation set). Half of this condition is awb raised to the
# female range and spoken fast (as formant_fast), half is awb as a man at a wide tempo and
# pitch range (CLUSTERGEN_TEMPO, CLUSTERGEN_F0 times its median F0).
CLUSTERGEN_VOICE = "awb"
CLUSTERGEN_RAISED = 0.5
CLUSTERGEN_TEMPO = (0.65, 1.15)
CLUSTERGEN_F0 = (0.8, 1.25)


def _espeak(accent: str, variant: str) -> str:
    return f"espeak-ng:{accent}+{variant}" if variant else f"espeak-ng:{accent}"


def voices(split: str) -> list[str]:
    """Every voice of a split; the two lists never share a voice."""
    if split == "train":
        esp = [_espeak(a, v) for a in ESPEAK_ACCENTS_TRAIN for v in ESPEAK_VARIANTS_TRAIN]
        return esp + [f"flite:{v}" for v in FLITE_TRAIN]
    esp = [_espeak(a, v) for a in ESPEAK_ACCENTS_TEST
           for v in ESPEAK_VARIANTS_TRAIN + ESPEAK_VARIANTS_TEST]
    esp += [_espeak(a, v) for a in ESPEAK_ACCENTS_TRAIN for v in ESPEAK_VARIANTS_TEST]
    return esp + [f"flite:{v}" for v in FLITE_TEST]


_split_voices = voices          # (long_recording's argument `voices` shadows the function)


def voice_split(voice: str) -> str:
    """The split a voice belongs to (ValueError for a voice in neither)."""
    for split in SPLITS:
        if voice in _voice_set(split):
            return split
    raise ValueError(f"unknown voice {voice!r}")


@cache
def _voice_set(split: str) -> frozenset:
    return frozenset(voices(split))


def draw_voice(r: random.Random, split: str) -> str:
    """A voice of `split`: flite with FLITE_SHARE, else espeak-ng. In test, half of the espeak
    voices are the held-out accent, half a held-out variant on a train accent."""
    if r.random() < FLITE_SHARE:
        return "flite:" + r.choice(FLITE_TRAIN if split == "train" else FLITE_TEST)
    if split == "train":
        return _espeak(r.choice(ESPEAK_ACCENTS_TRAIN), r.choice(ESPEAK_VARIANTS_TRAIN))
    if r.random() < 0.5:
        return _espeak(r.choice(ESPEAK_ACCENTS_TEST), r.choice(ESPEAK_VARIANTS_TRAIN + ESPEAK_VARIANTS_TEST))
    return _espeak(r.choice(ESPEAK_ACCENTS_TRAIN), r.choice(ESPEAK_VARIANTS_TEST))


def draw_tts(r: random.Random, voice: str) -> dict:
    """Speaking rate and pitch, in the engine's own parameters (the pitch/tempo variety):
    espeak-ng words per minute (default 175) and pitch 0..99 (default 50); flite
    duration_stretch (1 = default, larger = slower) and target mean F0 in Hz."""
    if voice.startswith("espeak-ng:"):
        return {"rate": r.randint(135, 205), "pitch": r.randint(30, 70)}
    f0 = FLITE_F0[voice.split(":", 1)[1]] * r.uniform(0.85, 1.2)
    return {"stretch": round(r.uniform(0.85, 1.2), 2), "f0": round(f0)}


def draw_formant_voice(r: random.Random, speed: tuple = FORMANT_SPEED,
                       tempo: tuple = FORMANT_TEMPO, name: str | None = None) -> tuple[str, dict, float]:
    """The "formant" (and "formant_fast") condition's voice: (a flite training voice, its tts
    params, the speed factor to apply to the rendering). flite speaks `factor` times slower
    than the tempo wanted, so that after the speed-up the duration stretch is in `tempo`.
    `name` fixes the flite voice (no draw for it, so the other draws stay as they were)."""
    voice = "flite:" + (name or r.choice(FLITE_TRAIN))
    factor = round(r.uniform(*speed), 2)
    tts = {"stretch": round(r.uniform(*tempo) * factor, 2), "f0": round(r.uniform(*FEMALE_F0) / factor)}
    return voice, tts, factor


def draw_clustergen_voice(r: random.Random) -> tuple[str, dict, float]:
    """The "clustergen" condition's voice: (flite awb, its tts params, speed factor). With
    CLUSTERGEN_RAISED the formant_fast draw on awb, else awb unraised (factor 1.0)."""
    if r.random() < CLUSTERGEN_RAISED:
        return draw_formant_voice(r, FORMANT_FAST_SPEED, FORMANT_FAST_TEMPO, name=CLUSTERGEN_VOICE)
    tts = {"stretch": round(r.uniform(*CLUSTERGEN_TEMPO), 2),
           "f0": round(FLITE_F0[CLUSTERGEN_VOICE] * r.uniform(*CLUSTERGEN_F0))}
    return "flite:" + CLUSTERGEN_VOICE, tts, 1.0


def missing_voices() -> list[str]:
    """Configured voices this machine's espeak-ng and flite do not have (both engines fall
    back silently to a default voice, so this is checked instead)."""
    listing = _stdout(["espeak-ng", "--voices=en"])               # Pty Language Age/Gender ...
    accents = {line.split()[1] for line in listing.splitlines()[1:] if line.split()}
    listing = _stdout(["espeak-ng", "--voices=variant"])          # ... File column "!v/<name>"
    variants = {line.split("!v/", 1)[1].strip() for line in listing.splitlines() if "!v/" in line}
    flite = set(_stdout(["flite", "-lv"]).split())                # "Voices available: kal ..."
    missing = [f"espeak-ng accent {a}" for a in ESPEAK_ACCENTS_TRAIN + ESPEAK_ACCENTS_TEST
               if a not in accents]
    missing += [f"espeak-ng variant {v}" for v in ESPEAK_VARIANTS_TRAIN + ESPEAK_VARIANTS_TEST
                if v and v not in variants]
    return missing + [f"flite voice {v}" for v in FLITE_TRAIN + FLITE_TEST if v not in flite]


# ---------------------------------------------------------------------------------------------
# Rendering: text -> float32 [L] at 16 kHz

def tts_wav(text: str, voice: str, tts: dict) -> bytes:
    """The engine's WAV bytes for `text` (a transcript), spoken by `voice` with `tts` params."""
    if not TRANSCRIPT.fullmatch(text):          # also keeps option-like text away from argv
        raise ValueError(f"not a transcript: {text!r}")
    engine, name = voice.split(":", 1)
    said = tts_text(text)
    if engine == "espeak-ng":
        cmd = ["espeak-ng", "-v", name, "-s", str(tts["rate"]), "-p", str(tts["pitch"]), "--stdout", said]
        return subprocess.run(cmd, capture_output=True, check=True, timeout=60).stdout
    with tempfile.TemporaryDirectory(prefix="corpus-flite-") as tmp:
        out = Path(tmp) / "out.wav"
        cmd = ["flite", "-voice", name, "--setf", f"duration_stretch={tts['stretch']}",
               "--setf", f"int_f0_target_mean={tts['f0']}", "-t", said, "-o", str(out)]
        subprocess.run(cmd, capture_output=True, check=True, timeout=60)
        return out.read_bytes()


def decode_wav(data: bytes) -> tuple[np.ndarray, int]:
    """16-bit mono WAV bytes -> (float32 [L] in [-1, 1), rate). espeak-ng's --stdout header
    claims a huge data size (it cannot seek back); parse_wav keeps what is there."""
    pcm, fmt, channels, rate = parse_wav(data)
    if fmt != "s16" or channels != 1:
        raise ValueError(f"expected 16-bit mono TTS output, got {fmt} x {channels}")
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0, rate


def resample(x: np.ndarray, rate: int, out_rate: int = SR) -> np.ndarray:
    """Polyphase resampling with scipy's Kaiser-windowed anti-aliasing FIR (22050 -> 16000 is
    320/441); output length ceil(L * out_rate / rate)."""
    g = math.gcd(rate, out_rate)
    if rate == out_rate:
        return x.astype(np.float32)
    return signal.resample_poly(x, out_rate // g, rate // g).astype(np.float32)


def render(text: str, voice: str, tts: dict) -> np.ndarray:
    """Text -> float32 [L] at 16 kHz, as the engine made it (no trimming, no level change)."""
    x, rate = decode_wav(tts_wav(text, voice, tts))
    return resample(x, rate)


def trim_silence(x: np.ndarray, rel_db: float = -45.0, margin_s: float = 0.02) -> np.ndarray:
    """Cut leading and trailing near-silence: keep from the first to the last 10 ms frame whose
    RMS is within rel_db of the loudest frame, plus margin_s on each side."""
    hop = SR // 100
    n = len(x) // hop
    if n == 0:
        return x
    rms = np.sqrt(np.mean(x[:n * hop].reshape(n, hop).astype(np.float64) ** 2, axis=1))
    loud = np.flatnonzero(rms > rms.max() * 10 ** (rel_db / 20))
    margin = int(margin_s * SR)
    return x[max(0, loud[0] * hop - margin): min(len(x), (loud[-1] + 1) * hop + margin)]


def normalize(x: np.ndarray, dbfs: float = REF_DBFS) -> np.ndarray:
    """Scale to an RMS of `dbfs` (peak limited to PEAK)."""
    scale = 10 ** (dbfs / 20) / max(_rms(x), 1e-9)
    scale = min(scale, PEAK / max(np.abs(x).max(), 1e-9))
    return (x * scale).astype(np.float32)


def speech(text: str, voice: str, tts: dict) -> np.ndarray:
    """The clean source of every utterance: rendered, trimmed, at REF_DBFS."""
    x = render(text, voice, tts)
    if len(x) < SR // 10 or not np.abs(x).max() > 1e-3:
        raise RuntimeError(f"{voice} {tts} said nothing for {text!r}")
    return normalize(trim_silence(x))


def speech_by_words(text: str, voice: str, tts: dict, rng: np.random.Generator,
                    gap_s: tuple = (0.03, 0.12), edge_s: float = 0.2) -> tuple[np.ndarray, list]:
    """The sentence spoken one word at a time, so the generator knows where every word is:
    (float32 [L] at 16 kHz at REF_DBFS, [(word, start_s, end_s)]). Each word is its own TTS
    call, trimmed tight (5 ms margin); words are joined by silences drawn from `gap_s`, with
    `edge_s` of silence at both ends. The alignment warm start (docs/training.md) trains the
    encoder on these spans before CTC and TDT have to discover the alignment themselves."""
    parts, spans, t = [np.zeros(int(edge_s * SR), np.float32)], [], edge_s
    for word in text.split():
        x = trim_silence(render(word, voice, tts), margin_s=0.005)
        spans.append((word, round(t, 6), round(t + len(x) / SR, 6)))
        gap = np.zeros(int(rng.uniform(*gap_s) * SR), np.float32)
        parts += [x, gap]
        t += (len(x) + len(gap)) / SR
    parts[-1] = np.zeros(int(edge_s * SR), np.float32)        # the last gap becomes the edge
    return normalize(np.concatenate(parts)), spans


PAUSE_S = (0.3, 2.5)            # silences between the sentences of a `pauses` utterance
NO_SPEECH_SHARE = 0.15          # share of `pauses` utterances that are only silence or noise


def pause_groups(seed: int, count: int) -> list[list[str]]:
    """The sentences of each `pauses` utterance: NO_SPEECH_SHARE of them none (silence or noise
    only, empty transcript), the others 2-4 train sentences, taken in order from the train
    sentences of the same seed. Depends only on (seed, count)."""
    r = random.Random(f"pauses/{seed}")
    plan = [0 if r.random() < NO_SPEECH_SHARE else r.randint(2, 4) for _ in range(count)]
    pool = iter(corpus_sentences("train", seed, sum(plan)))
    return [[next(pool) for _ in range(k)] for k in plan]


def speech_with_pauses(sentences: list, voice: str, tts: dict,
                       rng: np.random.Generator) -> tuple[np.ndarray, list]:
    """Sentences in one voice joined by silences drawn from PAUSE_S: (float32 [L] at REF_DBFS
    per sentence, [(text, start_s, end_s)]). The model must keep its place across pauses and
    say nothing inside them; one-sentence training utterances taught it neither (docs/history.md,
    small-v3)."""
    gaps = [float(rng.uniform(*PAUSE_S)) for _ in sentences[1:]] + [0.0]
    audio, spans = join_with_pauses([(text, speech(text, voice, tts)) for text in sentences], gaps, 0.0)
    return audio, [(t, round(a, 6), round(b, 6)) for t, a, b in spans]


RUNON_GAP_S = (0.05, 1.2)       # silences between the sentences of a `runon` utterance ...
RUNON_ZERO_SHARE = 0.3          # ... except this share, which run on with no gap at all
RUNON_VOICE_CHANGE = 0.5        # chance that the next sentence has another voice
RUNON_MID_START = 0.3           # chance that the first sentence starts mid-sentence (a word tail)


def runon_groups(seed: int, count: int) -> list[list[str]]:
    """The sentences of each `runon` utterance: 2-4 train sentences of the same seed, in order;
    with RUNON_MID_START the first one keeps only its last words (at least two; what a stream
    window that starts at a commit point inside a sentence hears). Depends only on (seed, count)."""
    r = random.Random(f"runon/{seed}")
    plan = [r.randint(2, 4) for _ in range(count)]
    pool = iter(corpus_sentences("train", seed, sum(plan)))
    groups = []
    for k in plan:
        group = [next(pool) for _ in range(k)]
        words = group[0].split()
        if len(words) > 3 and r.random() < RUNON_MID_START:
            group[0] = " ".join(words[r.randint(1, len(words) - 2):])
        groups.append(group)
    return groups


def speech_run_on(sentences: list, voice: str, tts: dict, r: random.Random, split: str,
                  rng: np.random.Generator) -> np.ndarray:
    """Sentences joined by short or no silences, the voice changing between them with
    RUNON_VOICE_CHANGE (each sentence at REF_DBFS): what a conversation or a dictation without
    pauses sounds like. The single-sentence and `pauses` corpora never put one sentence's end
    against the next one's start, and the model trained on them drops the start of the second
    (docs/history.md, "Continuous speech")."""
    clips = []
    for i, text in enumerate(sentences):
        if i and r.random() < RUNON_VOICE_CHANGE:
            voice = draw_voice(r, split)
            tts = draw_tts(r, voice)
        clips.append((text, speech(text, voice, tts)))
    gaps = [0.0 if rng.random() < RUNON_ZERO_SHARE else float(rng.uniform(*RUNON_GAP_S))
            for _ in sentences[1:]] + [0.0]
    return normalize(join_with_pauses(clips, gaps, 0.0)[0])


def join_with_pauses(clips: list, gaps_s: list, lead_s: float) -> tuple[np.ndarray, list]:
    """[(text, float32 audio)] joined by silences: lead_s before the first clip, gaps_s[i]
    after clip i (the last one is the trailing silence). Returns (float32 [L],
    [(text, start_s, end_s)] per clip)."""
    parts, spans, pos = [np.zeros(round(lead_s * SR), np.float32)], [], round(lead_s * SR)
    for (text, x), gap_s in zip(clips, gaps_s):
        spans.append((text, pos / SR, (pos + len(x)) / SR))
        gap = np.zeros(round(gap_s * SR), np.float32)
        parts += [x, gap]
        pos += len(x) + len(gap)
    return np.concatenate(parts), spans


def no_speech_chain(rng: np.random.Generator, pool: np.ndarray) -> tuple[np.ndarray, list]:
    """1-6 s without speech: digital silence, a microphone's noise floor (p .7, -80..-50 dBFS)
    and/or room noise (p .5, -65..-30 dBFS, any kind). Levels are absolute: there is no speech
    to set an SNR against."""
    seconds = round(float(rng.uniform(1.0, 6.0)), 3)
    x = np.zeros(round(seconds * SR), np.float32)
    augs = [{"name": "pad", "lead_s": seconds, "trail_s": 0.0}]
    if rng.random() < 0.7:
        floor = round(float(rng.uniform(-80.0, -50.0)), 1)
        x = noise_floor(x, floor, rng)
        augs.append({"name": "floor", "dbfs": floor})
    if rng.random() < 0.5:
        kind, level = NOISE_KINDS[int(rng.integers(len(NOISE_KINDS)))], round(float(rng.uniform(-65.0, -30.0)), 1)
        x = (x + make_noise(kind, len(x), rng, pool) * 10 ** (level / 20)).astype(np.float32)
        augs.append({"name": "room_noise", "kind": kind, "dbfs": level})
    return x, augs


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if len(x) else 0.0


# ---------------------------------------------------------------------------------------------
# Augmentation: each takes float32 [L] at 16 kHz and returns float32 [L'] at 16 kHz

def speed_perturb(x: np.ndarray, factor: float) -> np.ndarray:
    """Play `factor` times faster (tempo and pitch together, as Kaldi's speed perturbation):
    resample by 100 / round(100 * factor); L' = ceil(L / factor)."""
    k = round(factor * 100)
    g = math.gcd(100, k)
    return signal.resample_poly(x, 100 // g, k // g).astype(np.float32)


def colored_noise(n: int, rng: np.random.Generator, exponent: float) -> np.ndarray:
    """Noise with power ~ 1/f**exponent above 20 Hz and none below: white noise shaped in the
    frequency domain (1 = pink, 2 = brown). Without the cut, sub-audio drift would hold most of
    the power (the SNR would overstate the audible noise and vary along the clip). Unit RMS."""
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / SR)
    shape = np.where(f >= 20.0, np.maximum(f, 20.0) ** (-exponent / 2), 0.0)
    y = np.fft.irfft(spec * shape, n)
    return y / max(_rms(y), 1e-12)


def babble_noise(n: int, rng: np.random.Generator, pool: np.ndarray) -> np.ndarray:
    """Three to six 'talkers': windows of `pool` (reversed TTS speech, so no word in it can be
    understood, held-out voices only in test) at random offsets, looped, summed. Unit RMS."""
    y = np.zeros(n)
    for _ in range(int(rng.integers(3, 7))):
        start = int(rng.integers(len(pool)))
        y += pool[(start + np.arange(n)) % len(pool)]
    return y / max(_rms(y), 1e-12)


def make_noise(kind: str, n: int, rng: np.random.Generator, pool: np.ndarray | None = None) -> np.ndarray:
    """Unit-RMS noise [n] of a kind in NOISE_KINDS (babble needs the pool)."""
    if kind == "white":
        y = rng.standard_normal(n)
        return y / max(_rms(y), 1e-12)
    if kind == "pink":
        return colored_noise(n, rng, 1.0)
    if kind == "brown":
        return colored_noise(n, rng, 2.0)
    if kind == "babble":
        return babble_noise(n, rng, pool)
    raise ValueError(f"unknown noise kind {kind!r}")


def add_noise(x: np.ndarray, noise: np.ndarray, snr_db: float,
              speech_power: float | None = None) -> np.ndarray:
    """x + noise scaled so 10 log10(speech_power / mean(noise^2)) = snr_db exactly. The speech
    power defaults to x's mean power; pass the unpadded speech's when x has silence added."""
    p = _rms(x) ** 2 if speech_power is None else speech_power
    scale = math.sqrt(p / 10 ** (snr_db / 10)) / max(_rms(noise), 1e-12)
    return (x + noise * scale).astype(np.float32)


def reverb(x: np.ndarray, rt60: float, drr_db: float, rng: np.random.Generator) -> np.ndarray:
    """A synthetic room: impulse response = direct path (1 at t = 0) + Gaussian noise under an
    exponential envelope falling 60 dB in rt60 seconds, its energy drr_db below the direct
    path. Output [L + rt60 * SR - 1] (the tail rings on), RMS kept equal to the input's."""
    n = max(2, int(rt60 * SR))
    tail = rng.standard_normal(n) * np.exp(-6.907755 * np.arange(n) / (rt60 * SR))  # 10^-3 at rt60
    tail[0] = 0.0
    ir = tail * math.sqrt(10 ** (-drr_db / 10) / np.sum(tail ** 2))
    ir[0] = 1.0
    y = signal.fftconvolve(x.astype(np.float64), ir)
    return (y * (_rms(x) / max(_rms(y[:len(x)]), 1e-12))).astype(np.float32)


def mu_law(x: np.ndarray) -> np.ndarray:
    """G.711 mu-law (mu = 255) round trip at 8 bits: the telephone's quantisation noise."""
    c = np.sign(x) * np.log1p(255 * np.minimum(np.abs(x), 1.0)) / np.log1p(255)
    c = np.round(c * 127) / 127
    return np.sign(c) * np.expm1(np.abs(c) * np.log1p(255)) / 255


def telephone(x: np.ndarray, bandpass: bool = True, mulaw: bool = False) -> np.ndarray:
    """Narrowband channel: down to 8 kHz (anti-aliased, so nothing above 4 kHz survives),
    optionally the 300-3400 Hz voice band (4th-order Butterworth) and mu-law, back to 16 kHz."""
    y = signal.resample_poly(x.astype(np.float64), 1, 2)
    if bandpass:
        y = signal.sosfilt(_voice_band(), y)
    if mulaw:
        y = mu_law(y)
    return signal.resample_poly(y, 2, 1)[:len(x)].astype(np.float32)


@lru_cache(maxsize=1)
def _voice_band() -> np.ndarray:
    return signal.butter(4, [300, 3400], btype="bandpass", fs=8000, output="sos")


def apply_gain(x: np.ndarray, db: float) -> tuple[np.ndarray, float]:
    """x * 10^(db/20), lowered if needed so the peak stays at PEAK: (y, the gain applied in dB)."""
    peak = float(np.abs(x).max()) if len(x) else 0.0
    g = 10 ** (db / 20)
    if peak * g > PEAK:
        g = PEAK / peak
    return (x * g).astype(np.float32), round(20 * math.log10(g), 3)


def pad_silence(x: np.ndarray, lead_s: float, trail_s: float) -> np.ndarray:
    """round(lead_s * SR) zeros before and round(trail_s * SR) after: [L + lead + trail]."""
    return np.concatenate([np.zeros(round(lead_s * SR), np.float32), x,
                           np.zeros(round(trail_s * SR), np.float32)])


def noise_floor(x: np.ndarray, dbfs: float, rng: np.random.Generator) -> np.ndarray:
    """Add white noise at an RMS of `dbfs` over the whole signal (a microphone's self-noise,
    so padded 'silence' is not digital zero)."""
    return (x + rng.standard_normal(len(x)) * 10 ** (dbfs / 20)).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# Recipes: which augmentations an utterance gets (recorded in its metadata, in order)

def train_chain(x: np.ndarray, rng: np.random.Generator, pool: np.ndarray,
                speed: bool = True, noise_p: float = 0.5,
                snr_db: tuple[float, float] = (5.0, 30.0)) -> tuple[np.ndarray, list]:
    """A random chain for a training utterance x (clean speech at REF_DBFS):
    speed (p .5; not with speed=False: the formant condition has its own) -> reverb (p .3) ->
    silence padding (always) -> noise floor (p .5) -> noise (p noise_p, snr_db SNR against the
    unpadded speech) -> telephone (p .1) -> gain (always, -20..+6 dB, clip-safe). Parameters
    are rounded before use, so the record is exact. The defaults draw exactly as the chain did
    before noise_p and snr_db existed, so they reproduce the corpora made then."""
    augs = []
    if speed and rng.random() < 0.5:
        factor = round(float(rng.uniform(0.9, 1.1)), 2)
        if factor != 1.0:
            x = speed_perturb(x, factor)
            augs.append({"name": "speed", "factor": factor})
    if rng.random() < 0.3:
        rt60, drr = round(float(rng.uniform(0.2, 0.6)), 2), round(float(rng.uniform(0.0, 10.0)), 1)
        x = reverb(x, rt60, drr, rng)
        augs.append({"name": "reverb", "rt60": rt60, "drr_db": drr})
    power = _rms(x) ** 2
    lead, trail = (round(float(rng.uniform(0.05, 1.0)), 3) for _ in range(2))
    x = pad_silence(x, lead, trail)
    augs.append({"name": "pad", "lead_s": lead, "trail_s": trail})
    if rng.random() < 0.5:
        floor = round(float(rng.uniform(-80.0, -60.0)), 1)
        x = noise_floor(x, floor, rng)
        augs.append({"name": "floor", "dbfs": floor})
    if rng.random() < noise_p:
        kind, snr = NOISE_KINDS[int(rng.integers(len(NOISE_KINDS)))], round(float(rng.uniform(*snr_db)), 1)
        x = add_noise(x, make_noise(kind, len(x), rng, pool), snr, power)
        augs.append({"name": "noise", "kind": kind, "snr_db": snr})
    if rng.random() < 0.1:
        bandpass, mulaw = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
        x = telephone(x, bandpass, mulaw)
        augs.append({"name": "telephone", "bandpass": bandpass, "mulaw": mulaw})
    x, db = apply_gain(x, round(float(rng.uniform(-20.0, 6.0)), 1))
    augs.append({"name": "gain", "db": db})
    return x, augs


def heldout_chain(x: np.ndarray, rng: np.random.Generator, noise_rng: np.random.Generator,
               condition: str, pool: np.ndarray) -> tuple[np.ndarray, list]:
    """Test utterance: gain -6..0 dB -> pad 0.2..0.5 s of zeros each side; noise10db adds
    white/pink/babble noise at 10 dB SNR (against the unpadded speech) over the whole clip and,
    if its peak would pass PEAK, scales all down ("limit" record, so noisy / limit - clean is
    the noise). Clean and noise10db of one (seed, index) share everything but the noise."""
    x, db = apply_gain(x, round(float(rng.uniform(-6.0, 0.0)), 1))
    power = _rms(x) ** 2
    lead, trail = (round(float(rng.uniform(0.2, 0.5)), 3) for _ in range(2))
    x = pad_silence(x, lead, trail)
    augs = [{"name": "gain", "db": db}, {"name": "pad", "lead_s": lead, "trail_s": trail}]
    if condition == "clean":
        return x, augs
    kind = ("white", "pink", "babble")[int(noise_rng.integers(3))]
    x = add_noise(x, make_noise(kind, len(x), noise_rng, pool), 10.0, power)
    augs.append({"name": "noise", "kind": kind, "snr_db": 10.0})
    peak = float(np.abs(x).max())
    if peak > PEAK:
        x = (x * (PEAK / peak)).astype(np.float32)
        augs.append({"name": "limit", "scale": PEAK / peak})
    return x, augs


_POOLS: dict = {}


def babble_pool(split: str, seed: int, n_utterances: int = 12) -> np.ndarray:
    """Reversed speech for babble: n_utterances sentences and voices of `split` (so test babble
    is held-out material too), each at REF_DBFS, concatenated. Cached per process."""
    key = (split, seed, n_utterances)
    if key not in _POOLS:
        r = random.Random(f"babble/{split}/{seed}")
        parts = []
        for text in corpus_sentences(split, seed + 7919, n_utterances):
            voice = draw_voice(r, split)
            parts.append(speech(text, voice, draw_tts(r, voice))[::-1])
        _POOLS[key] = np.concatenate(parts).astype(np.float64)
    return _POOLS[key]


def utterance_rngs(split: str, seed: int, index: int):
    """The independent random streams of one utterance: (voice and tts: random.Random,
    augmentation: numpy, test noise: numpy)."""
    code = SPLITS.index(split)
    return (random.Random(f"voice/{split}/{seed}/{index}"),
            np.random.default_rng([seed, code, index, 1]),
            np.random.default_rng([seed, code, index, 2]))


def make_utterance(split: str, seed: int, index: int, text: str,
                   condition: str | None = None) -> tuple[np.ndarray, dict]:
    """One corpus utterance: (float32 [L] at 16 kHz within [-PEAK, PEAK], metadata)."""
    r, rng, noise_rng = utterance_rngs(split, seed, index)
    voice = draw_voice(r, split)
    tts = draw_tts(r, voice)
    extra = {}
    if condition == "by_words":             # the alignment warm start's clean, word-timed speech
        x, extra["spans"] = speech_by_words(text, voice, tts, rng)
        augs = []
    elif condition == "pauses":             # text: a list of 0-4 sentences (pause_groups)
        if text:        # (the spans are not recorded: speed and padding move them)
            x, augs = train_chain(speech_with_pauses(text, voice, tts, rng)[0], rng, babble_pool(split, seed))
        else:
            x, augs = no_speech_chain(rng, babble_pool(split, seed))
        text = " ".join(text)
    elif condition == "runon":              # text: 2-4 sentences, run together (runon_groups)
        x, augs = train_chain(speech_run_on(text, voice, tts, r, split, rng), rng, babble_pool(split, seed))
        text = " ".join(text)
    elif condition in ("formant", "formant_fast", "clustergen"):   # flite voices, re-voiced
        if condition == "clustergen":       # awb, half of it raised to a female range
            voice, tts, factor = draw_clustergen_voice(r)
        elif condition == "formant":        # a male flite voice raised to a female range
            voice, tts, factor = draw_formant_voice(r)
        else:
            voice, tts, factor = draw_formant_voice(r, FORMANT_FAST_SPEED, FORMANT_FAST_TEMPO)
        rendered = speech(text, voice, tts)
        x, augs = train_chain(speed_perturb(rendered, factor) if factor != 1.0 else rendered,
                              rng, babble_pool(split, seed), speed=False)
        if factor != 1.0:
            augs.insert(0, {"name": "formant_speed", "factor": factor})
    elif condition == "noisy":              # noise on every utterance, 5-15 dB SNR
        x, augs = train_chain(speech(text, voice, tts), rng, babble_pool(split, seed),
                              noise_p=1.0, snr_db=NOISY_SNR_DB)
    elif split == "train":
        x, augs = train_chain(speech(text, voice, tts), rng, babble_pool(split, seed))
    else:
        x, augs = heldout_chain(speech(text, voice, tts), rng, noise_rng, condition, babble_pool(split, seed))
    suffix = {"by_words": "-w", "pauses": "-p", "formant": "-f", "noisy": "-n",
              "formant_fast": "-ff", "clustergen": "-cg", "runon": "-r"}.get(condition, "")
    meta = {"id": f"{split}-{seed}-{index:06d}{suffix}", "text": text, "voice": voice,
            "tts": tts, "augmentations": augs, "seconds": round(len(x) / SR, 4), **extra}
    return x, meta


def to_int16(x: np.ndarray) -> np.ndarray:
    return np.round(np.clip(x, -1.0, 32767 / 32768) * 32768).astype(np.int16)


# ---------------------------------------------------------------------------------------------
# Long recordings for streaming tests

def long_recording(seed: int, n_utterances: int, pauses_s, noise_db: float | None = None,
                   voices: list[str] | None = None, split: str = "test", edge_s: float = 0.5,
                   noise_kind: str = "pink") -> tuple[np.ndarray, list]:
    """Utterances of `split` (held-out sentences and voices by default) joined by pauses.

    pauses_s: one number or n_utterances - 1 numbers, the silences between utterances; edge_s
    of silence before the first and after the last. noise_db: if given, `noise_kind` noise over
    the whole recording at that SNR in dB against the mean power of the speech spans.
    Returns (float32 [L] at 16 kHz, [(text, start_s, end_s)] per utterance), where each span is
    the trimmed speech (tight to within trim_silence's 20 ms margin) and outside them is silence."""
    gaps = [float(pauses_s)] * (n_utterances - 1) if np.isscalar(pauses_s) else [float(p) for p in pauses_s]
    if len(gaps) != max(0, n_utterances - 1):
        raise ValueError(f"{n_utterances} utterances need {n_utterances - 1} pauses, got {len(gaps)}")
    choices = list(voices) if voices is not None else _split_voices(split)
    r = random.Random(f"long/{split}/{seed}")
    clips = []
    for text in corpus_sentences(split, seed, n_utterances):
        voice = r.choice(choices)
        clips.append((text, speech(text, voice, draw_tts(r, voice))))
    audio, spans = join_with_pauses(clips, gaps + [edge_s], edge_s)
    if noise_db is not None:
        voiced = np.concatenate([audio[round(s * SR):round(e * SR)] for _, s, e in spans])
        rng = np.random.default_rng([seed, 3])
        pool = babble_pool(split, seed) if noise_kind == "babble" else None
        audio = add_noise(audio, make_noise(noise_kind, len(audio), rng, pool), noise_db, _rms(voiced) ** 2)
        audio = (audio * min(1.0, PEAK / float(np.abs(audio).max()))).astype(np.float32)
    return audio, spans


# ---------------------------------------------------------------------------------------------
# Writer

def _job(args):
    split, seed, index, text, condition = args
    x, meta = make_utterance(split, seed, index, text, condition)
    return to_int16(x), meta


def _results(jobs: list, workers: int):
    """The jobs' results in order, computed in `workers` processes (1: in this one)."""
    if workers <= 1:
        yield from map(_job, jobs)
        return
    with multiprocessing.Pool(workers) as pool:
        yield from pool.imap(_job, jobs, chunksize=2)


def _stdout(cmd: list, check: bool = True) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=check).stdout


def tool_versions() -> dict:
    """What made the audio (a different TTS build says things differently)."""
    import scipy
    return {"espeak-ng": _stdout(["espeak-ng", "--version"]).strip(),
            "flite": _stdout(["flite", "--version"], check=False).strip().splitlines()[-1].strip(),  # exits 1
            "numpy": np.__version__, "scipy": scipy.__version__}


class Progress:
    """n/N and utterances per second on stderr, at most every half second."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.enabled, self.t0, self.last = total, enabled, time.monotonic(), 0.0

    def update(self, n: int):
        now = time.monotonic()
        if self.enabled and (now - self.last >= 0.5 or n == self.total):
            rate = n / max(now - self.t0, 1e-9)
            sys.stderr.write(f"\r{n}/{self.total} utterances  {rate:.1f} utt/s")
            if n == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()
            self.last = now


def write_shards(out: Path, utterances, count: int, shard_size: int = 500, progress: bool = True) -> int:
    """The writer's layout (module docstring) from `count` (int16 pcm [L], metadata) pairs, in
    order: each metadata gets its shard, offset and samples; the manifest appears only when
    complete. Returns the number of shards."""
    bar = Progress(count, progress)
    shard, offset, chunks = 0, 0, []
    tmp = out / "manifest.jsonl.partial"
    with open(tmp, "w") as manifest:
        for n, (pcm, meta) in enumerate(utterances, 1):
            meta.update(shard=f"shard-{shard:05d}.npy", offset=offset, samples=len(pcm))
            manifest.write(json.dumps(meta) + "\n")
            chunks.append(pcm)
            offset += len(pcm)
            if len(chunks) == shard_size or n == count:
                np.save(out / f"shard-{shard:05d}.npy", np.concatenate(chunks))
                shard, offset, chunks = shard + 1, 0, []
            bar.update(n)
    tmp.replace(out / "manifest.jsonl")
    return shard


def write_corpus(out: Path, split: str, count: int, seed: int, workers: int = 1,
                 condition: str | None = None, shard_size: int = 500, progress: bool = True) -> dict:
    """Write `count` utterances of `split` to `out` (see the module docstring); returns info."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}")
    if split == "test":
        condition = condition or "clean"
        if condition not in TEST_CONDITIONS:
            raise ValueError(f"condition must be one of {TEST_CONDITIONS}")
    elif condition not in TRAIN_CONDITIONS:
        raise ValueError("train takes no --condition (it draws its own augmentations) except "
                         + " or ".join(c for c in TRAIN_CONDITIONS if c))
    missing = missing_voices()
    if missing:
        raise RuntimeError("this machine's TTS lacks: " + ", ".join(missing))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    groups = {"pauses": pause_groups, "runon": runon_groups}.get(condition)
    texts = groups(seed, count) if groups else corpus_sentences(split, seed, count)
    jobs = [(split, seed, i, t, condition) for i, t in enumerate(texts)]
    shards = write_shards(out, _results(jobs, workers), count, shard_size, progress)
    info = {"split": split, "condition": condition, "count": count, "seed": seed, "shards": shards,
            "shard_size": shard_size, "sample_rate": SR, "dtype": "int16", "test_share": TEST_SHARE,
            "voices": voices(split), "tools": tool_versions()}
    (out / "info.json").write_text(json.dumps(info, indent=1) + "\n")
    return info


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m training.corpus", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--split", choices=SPLITS, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--condition", choices=TEST_CONDITIONS + tuple(c for c in TRAIN_CONDITIONS if c),
                   help="test: clean (default) or noise10db; train: by_words renders word by word, "
                        "with each word's span in the manifest (the alignment warm start); pauses "
                        "joins 2-4 sentences by 0.3-2.5 s pauses, or gives none (15%%: silence or "
                        "noise, empty transcript); formant raises the male flite training voices "
                        "to a female range (speed 1.12-1.3 after speaking that much slower); formant_fast "
                        "does so at 0.65-1.0 of the voice's tempo, speed 1.1-1.35; clustergen is flite awb "
                        "only, half as formant_fast, half unraised at 0.65-1.15 tempo; runon joins 2-4 "
                        "sentences by 0-1.2 s (30%% none), changing voice half the time, the first "
                        "starting mid-sentence 30%% of the time")
    p.add_argument("--shard-size", type=int, default=500, help="utterances per shard")
    a = p.parse_args(argv)
    info = write_corpus(a.out, a.split, a.count, a.seed, a.workers, a.condition, a.shard_size)
    print(json.dumps({k: info[k] for k in ("split", "condition", "count", "seed", "shards")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
